"""Writing a trained vocabulary: a Hugging Face tokenizer.json (what `tokenizers` writes after the
same training, plus a ByteLevel decoder) and a tiktoken rank file.

tiktoken merges by the rank of the concatenated bytes, Hugging Face by the merge list: they agree on
vocabularies where every token's best split is the merge that made it. A string two merges produce
(Hugging Face's "already in the vocabulary" case) is one token, id and rank, in both files."""

from __future__ import annotations

import base64
import json
import os
import re

from ..model.byte_alphabet import BYTE_TO_CHAR
from ..model.patterns import kind_of_pattern

_POSSESSIVE_INTERVAL = re.compile(r"(\{\d+(?:,\d*)?\})\+")


def onig_pattern(pattern: str) -> str:
    """`pattern` as Hugging Face's Split regex (Oniguruma) must state it to split as tiktoken does.

    Oniguruma reads `X{1,3}+` as `(?:X{1,3})+` (any run), not as a possessive `X{1,3}`: cl100k's
    `\\p{N}{1,3}+` would take a whole run of digits. In the scanned patterns each such interval ends
    its alternative, where possessive and greedy match alike, so the `+` is dropped there. Other
    patterns are returned as they are."""
    if kind_of_pattern(pattern) is None:
        return pattern
    return _POSSESSIVE_INTERVAL.sub(r"\1", pattern)


def _chars(b: bytes) -> str:
    return "".join(BYTE_TO_CHAR[x] for x in b)


def tokenizer_json(enc) -> dict:
    """The tokenizer.json document of a `train_bpe` result."""
    vocab: dict[str, int] = {t: i for t, i in enc.specials.items()}
    for b, i in sorted(enc.ranks.items(), key=lambda kv: kv[1]):
        vocab.setdefault(_chars(b), i)
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for t, i in sorted(enc.specials.items(), key=lambda kv: kv[1])]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": onig_pattern(enc.pattern)}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": dict(sorted(vocab.items(), key=lambda kv: kv[1])),
                  "merges": [[_chars(a), _chars(b)] for a, b in enc.merges]},
    }


def save_tokenizer_json(enc, path: str | os.PathLike) -> None:
    """Write `enc` (a `train_bpe` result) as a Hugging Face tokenizer.json."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(enc), f, ensure_ascii=False)


def save_tiktoken(enc, path: str | os.PathLike) -> None:
    """Write `enc`'s ordinary tokens as a `.tiktoken` rank file (`base64 rank` lines, by rank); load it
    with `Encoding.from_tiktoken_file(path, pattern=enc.pattern, special_tokens=enc.specials)` or
    `tiktoken.load.load_tiktoken_bpe`."""
    with open(path, "wb") as f:
        for b, i in sorted(enc.ranks.items(), key=lambda kv: kv[1]):
            f.write(base64.b64encode(b) + b" " + str(i).encode() + b"\n")
