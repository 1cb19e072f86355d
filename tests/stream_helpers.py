"""Test helpers for the streaming decoder: token byte tables built straight from tiktoken rank files.

`RankTable` is a reference for the `Encoding` built without the package's loaders or tables: it
has `n_vocab`, `token_byte_table()` and the reference `decode`, read straight from a `.tiktoken`
rank file plus special tokens, with unassigned holes where the ids skip (cl100k: 100256,
100261..100275).
"""

from __future__ import annotations

import ast
import base64
import functools
import inspect
import os
from pathlib import Path

import numpy as np
import pytest


def rank_file(name: str) -> Path:
    """The rank file of encoding `name`: the shared one, else the package's embedded copy; skips naming
    the file when there is neither (see conftest.get_shared_path)."""
    from conftest import get_shared_path

    return get_shared_path(f"tokenizers/tiktoken/{name}.tiktoken")


SPECIALS = {
    "r50k_base": {"<|endoftext|>": 50256},
    "cl100k_base": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                    "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}


def load_ranks(path: Path) -> dict[bytes, int]:
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
    return ranks


class RankTable:
    """n_vocab + token_byte_table() + reference decode, from a rank file and special tokens."""

    def __init__(self, name: str, ranks: dict[bytes, int], specials: dict[str, int]):
        self.name = name
        by_id: dict[int, bytes] = {r: b for b, r in ranks.items()}
        for s, i in specials.items():
            assert i not in by_id, (s, i)
            by_id[i] = s.encode("utf-8")
        self.n_vocab = max(by_id) + 1
        self.by_id = by_id
        self.special_ids = sorted(specials.values())
        lens = np.zeros(self.n_vocab, np.int64)
        valid = np.zeros(self.n_vocab, np.bool_)
        for i, b in by_id.items():
            lens[i] = len(b)
            valid[i] = True
        offsets = np.zeros(self.n_vocab + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        data = np.frombuffer(b"".join(by_id.get(i, b"") for i in range(self.n_vocab)), np.uint8).copy()
        self._table = (data, offsets, valid)
        self.valid_ids = np.flatnonzero(valid)
        self.holes = np.flatnonzero(~valid)

    def token_byte_table(self):
        return self._table

    def decode_bytes(self, ids) -> bytes:
        return b"".join(self.by_id[int(i)] for i in ids)

    def decode(self, ids) -> str:
        return self.decode_bytes(ids).decode("utf-8", "replace")


@functools.lru_cache(maxsize=None)
def rank_table(name: str) -> RankTable:
    path = rank_file(name)
    return RankTable(name, load_ranks(path), SPECIALS[name])


def _pat_str(name: str) -> str:
    """pat_str of a tiktoken_ext.openai_public constructor, read from its source (not called: offline)."""
    import tiktoken_ext.openai_public as op

    if name == "r50k_base":
        return op.r50k_pat_str
    tree = ast.parse(inspect.getsource(getattr(op, name)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pat_str" for t in node.targets):
            return eval(compile(ast.Expression(node.value), "<pat_str>", "eval"), {})
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "pat_str" and isinstance(v, ast.Constant):
                    return v.value
    raise LookupError(f"no pat_str in tiktoken_ext.openai_public.{name}")


@functools.lru_cache(maxsize=None)
def tiktoken_encoding(name: str):
    """The tiktoken oracle, built offline from the shared rank file."""
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
    tiktoken = pytest.importorskip("tiktoken")
    import tiktoken.load

    path = rank_file(name)
    return tiktoken.Encoding(name, pat_str=_pat_str(name), mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(path)),
                             special_tokens=SPECIALS[name])


def corpus_dir() -> Path:
    from conftest import SHARED

    return SHARED / "corpora"
