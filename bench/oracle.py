"""Offline tiktoken: encoding specs from shared/ rank files, and oracle ids.

One job: build tiktoken encodings without network and compute the reference
ids every other library is checked against.

tiktoken's `tiktoken_ext.openai_public.<name>()` constructors download the
rank file.  We call them with their module-level `load_tiktoken_bpe` swapped
for a loader that reads shared/tokenizers/tiktoken/<file> and still checks the
official sha256 (`expected_hash`), so `pat_str` and the special tokens come
from tiktoken's own source, not from a copy.  TIKTOKEN_CACHE_DIR="" keeps
tiktoken from writing a cache.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from bench.data import tokenizers_dir

ENCODINGS = ("r50k_base", "cl100k_base", "o200k_base")


def rank_file(name: str) -> Path:
    return tokenizers_dir() / "tiktoken" / f"{name}.tiktoken"


@lru_cache(maxsize=None)
def spec(name: str) -> dict:
    """tiktoken's constructor dict for `name` (name, pat_str, mergeable_ranks,
    special_tokens[, explicit_n_vocab]), loaded from the local rank file."""
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
    import tiktoken_ext.openai_public as op
    from tiktoken.load import load_tiktoken_bpe

    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}")
    path = rank_file(name)
    if not path.is_file():
        raise FileNotFoundError(f"rank file missing: {path}")

    def local_loader(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        fname = url.rsplit("/", 1)[-1]
        if fname != path.name:
            raise RuntimeError(f"{name} asked for {url}, expected {path.name}")
        return load_tiktoken_bpe(str(path), expected_hash=expected_hash)

    saved = op.load_tiktoken_bpe
    op.load_tiktoken_bpe = local_loader
    try:
        return getattr(op, name)()
    finally:
        op.load_tiktoken_bpe = saved


def pattern(name: str) -> str:
    return spec(name)["pat_str"]


def special_tokens(name: str) -> dict[str, int]:
    return dict(spec(name)["special_tokens"])


@lru_cache(maxsize=None)
def tiktoken_encoding(name: str):
    import tiktoken

    return tiktoken.Encoding(**spec(name))


def oracle_whole(name: str, text: str):
    import numpy as np

    return np.asarray(tiktoken_encoding(name).encode_ordinary(text), dtype=np.uint32)


def oracle_batch(name: str, docs: list[str]):
    """(flat ids, per-doc lengths) from tiktoken's encode_ordinary per doc."""
    import numpy as np

    enc = tiktoken_encoding(name)
    out = enc.encode_ordinary_batch(docs, num_threads=2)
    lens = np.fromiter((len(x) for x in out), dtype=np.int64, count=len(out))
    flat = np.fromiter((t for x in out for t in x), dtype=np.uint32, count=int(lens.sum()))
    return flat, lens
