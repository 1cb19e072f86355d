"""The naive references the kernels are checked against, written from the definitions: slow, short,
and with nothing in common with the code under test (no tables, no scanners, no cache).

- `naive_merge`: byte-pair merging (lowest rank first, leftmost among equals), over ids.
- `pair_dict`: the (left id, right id) -> (rank, merged id) map of a merge list, for `naive_merge`.
- `naive_split`: a split regex applied by the `regex` module (the pieces tiktoken and HF cut).
- `naive_byte_decode`: what decoding a byte sequence means (UTF-8 with U+FFFD per ill-formed part).

Two larger references live in their own modules: `spm_reference.py` (SentencePiece's normalizer,
BPE by score and unigram Viterbi, from the C++) and `tltok_jit/compile/python_encoder.py` (tiktoken's whole
encode in Python, shipped because it also serves calls while the kernels compile).
"""

from __future__ import annotations

import functools

import regex

from tltok_jit.model.description import ModelDescription


def naive_merge(symbols: list[int], pair_rank: dict[tuple[int, int], tuple[int, int]]) -> list[int]:
    """Apply the lowest-rank pair, leftmost among equals, until none applies."""
    syms = list(symbols)
    while True:
        best = None
        for i in range(len(syms) - 1):
            v = pair_rank.get((syms[i], syms[i + 1]))
            if v is not None and (best is None or v[0] < best[0]):
                best = (v[0], i, v[1])
        if best is None:
            return syms
        _, i, merged = best
        syms[i:i + 2] = [merged]


def pair_dict(model: ModelDescription) -> dict[tuple[int, int], tuple[int, int]]:
    """(id of left, id of right) -> (merge rank, id of the merged token); the first merge of a pair wins."""
    out = {}
    for r, (a, b) in enumerate(model.merges):
        out.setdefault((model.vocab[a], model.vocab[b]), (r, model.vocab[a + b]))
    return out


@functools.lru_cache(maxsize=None)
def split_regex(pattern: str):
    """`pattern` compiled by `regex`, its one `$` read as end of text (`\\Z`), as tiktoken's Rust
    regex reads it (Python's `$` would also match before a final newline)."""
    assert pattern.count("$") <= 1
    return regex.compile(pattern.replace("$", r"\Z"))


def naive_split(pattern: str, text: str) -> list[str]:
    """The pieces `pattern` cuts `text` into."""
    return split_regex(pattern).findall(text)


def naive_byte_decode(data: bytes) -> str:
    """UTF-8, one U+FFFD per maximal ill-formed subpart (Python's "replace" is that rule)."""
    return bytes(data).decode("utf-8", "replace")
