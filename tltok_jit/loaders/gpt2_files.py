"""GPT-2's classic `vocab.json` + `merges.txt` -> ModelDescription (as HF's GPT-2 tokenizer.json).

    enc = tltok_jit.from_gpt2_files("vocab.json", "merges.txt")

The `#version` line of merges.txt is skipped; every other line is `left right` (one space), a merge
whose parts or result are not in vocab.json is a format error naming the line's merge. The model is
GPT-2's: ByteLevel pre-tokenizer with GPT-2's original regex, ByteLevel decoder, no post-processor,
and `<|endoftext|>` (when vocab.json has it) as a special added token.
"""

from __future__ import annotations

import os

from ..model.description import AddedToken, ModelDescription, TokenizerFileError
from .hf_json import HFPipeline, _check_merges, beta_decode, load_json

__all__ = ["read_gpt2_files"]


def read_gpt2_files(vocab_path: str | os.PathLike, merges_path: str | os.PathLike, *,
                    name: str | None = None, special_tokens: tuple[str, ...] | None = None) -> ModelDescription:
    """GPT-2's classic `vocab.json` + `merges.txt` (the `#version` line is skipped), with GPT-2's
    ByteLevel pre-tokenizer and decoder. `special_tokens` (default: `<|endoftext|>` when the
    vocabulary has it) become special added tokens, as in GPT-2's tokenizer.json."""
    vwhere = os.fspath(vocab_path)
    mwhere = os.fspath(merges_path)
    vocab_str = load_json(vocab_path)
    if not isinstance(vocab_str, dict) or not all(isinstance(v, int) for v in vocab_str.values()):
        raise TokenizerFileError(f"{vwhere}: must be a JSON object of token -> integer id")
    with open(mwhere, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TokenizerFileError(f"{mwhere}: not UTF-8 text (byte {e.start})") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    pairs = []
    for no, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise TokenizerFileError(f"{mwhere}:{no}: {line!r} is not two tokens separated by one space")
        pairs.append((parts[0], parts[1]))
    try:
        pairs = _check_merges(pairs, vocab_str, mwhere)
    except TokenizerFileError as e:
        raise TokenizerFileError(str(e).replace(f"{mwhere}:", f"{mwhere} (with {vwhere}):", 1)) from None
    vocab = {}
    for s, i in vocab_str.items():
        b = beta_decode(s)
        if b is None or not b:
            raise TokenizerFileError(f"{vwhere}: token {s!r} (id {i}) is not in GPT-2's byte alphabet")
        vocab[b] = i
    if special_tokens is None:
        special_tokens = tuple(s for s in ("<|endoftext|>",) if s in vocab_str)
    added = [AddedToken(s, vocab_str[s], special=True) for s in special_tokens if s in vocab_str]
    from ..model.patterns import GPT2_ORIGINAL_PATTERN

    missing = bytes(b for b in range(256) if bytes([b]) not in vocab)
    pipeline = HFPipeline(special_ids=frozenset(t.id for t in added), missing_bytes=missing)
    return ModelDescription(
        name=name or "gpt2",
        vocab=vocab,
        merges=[(beta_decode(a), beta_decode(b)) for a, b in pairs],
        pattern=GPT2_ORIGINAL_PATTERN,
        added_tokens=added,
        ignore_merges=False,
        pattern_kind="gpt2",
        source=f"{vwhere} + {mwhere}",
        allow_missing_bytes=bool(missing),
        hf=pipeline,
    )
