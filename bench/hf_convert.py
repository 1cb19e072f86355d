"""tokenizer.json files for the HF-format anchors (tokenizers, tokie, fastokens).

One job: give every tokenizer.json-only library an offline file per encoding.

- r50k_base: shared/tokenizers/gpt2/tokenizer.json as shipped (GPT-2's own
  file; ByteLevel pretokenizer with GPT-2's regex, merges from vocab.bpe).
- cl100k_base / o200k_base: shared/ has no tokenizer.json for these (the
  Llama-3 file is a different vocabulary), so we build one from the .tiktoken
  rank file the way transformers' TikTokenConverter does: byte-level vocab
  (GPT-2 bytes_to_unicode), merges = every split (a, b) of every token whose
  halves are both tokens, ordered by the merged token's rank, a
  Split(pat_str, Isolated) + ByteLevel(use_regex=false) pretokenizer (pat_str
  adapted to Oniguruma, see onig_pattern), and
  `ignore_merges: true` (a pretoken that is itself a token is emitted whole,
  as tiktoken does).  The file is cached in bench/.cache/hf/.  Whether it
  reproduces tiktoken is not assumed: the "exact" column checks it.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.data import tokenizers_dir
from tltok_jit.loaders.hf_json import bytes_to_unicode

CACHE = Path(__file__).resolve().parent / ".cache" / "hf"


def onig_pattern(pat: str) -> str:
    """HF `tokenizers` compiles Split regexes with Oniguruma (Ruby syntax), where
    `X{1,3}+` is NOT possessive but means `(X{1,3})+` (cl100k's `\\p{N}{1,3}+`
    would then swallow every digit run).  A possessive bound at the end of an
    alternative cannot change what matches, so drop the `+` (Llama 3's
    tokenizer.json writes cl100k's digit rule the same way).  `?+`, `++`, `*+`
    are possessive in Oniguruma too and stay."""
    return pat.replace("{1,3}+", "{1,3}")


def convert(name: str) -> dict:
    from bench import oracle

    sp = oracle.spec(name)
    ranks: dict[bytes, int] = sp["mergeable_ranks"]
    b2u = bytes_to_unicode()

    def s(b: bytes) -> str:
        return "".join(b2u[x] for x in b)

    vocab = {s(tok): rank for tok, rank in ranks.items()}
    merges: list[tuple[int, int, int, str, str]] = []
    for tok, rank in ranks.items():
        if len(tok) < 2:
            continue
        for i in range(1, len(tok)):
            left, right = tok[:i], tok[i:]
            rl, rr = ranks.get(left), ranks.get(right)
            if rl is not None and rr is not None:
                merges.append((rank, rl, rr, s(left), s(right)))
    merges.sort()
    added = [
        {"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for c, i in sorted(sp["special_tokens"].items(), key=lambda kv: kv[1])
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": onig_pattern(sp["pat_str"])}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
            "vocab": vocab,
            "merges": [[a, b] for _, _, _, a, b in merges],
        },
    }


def tokenizer_json(name: str) -> tuple[Path, str]:
    """(path to a tokenizer.json for `name`, how it was obtained)."""
    if name == "r50k_base":
        p = tokenizers_dir() / "gpt2" / "tokenizer.json"
        if not p.is_file():
            raise FileNotFoundError(f"missing {p}")
        return p, "shared gpt2/tokenizer.json"
    out = CACHE / name / "tokenizer.json"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(convert(name), ensure_ascii=False), encoding="utf-8")
        tmp.replace(out)
    return out, f"converted from {name}.tiktoken (bench/hf_convert.py)"


if __name__ == "__main__":
    import sys

    for n in sys.argv[1:] or ["cl100k_base", "o200k_base"]:
        print(n, *tokenizer_json(n))
