"""Shared test configuration: the shared data folder, tiktoken oracles built offline, our encodings.

Data location: env `TLTOK_SHARED`, else `<repo>/../shared`. `TLTOK_DATA` is set to its `tokenizers/`
folder when unset (that is how `tltok_jit.get_encoding` finds the rank files), and
`TIKTOKEN_CACHE_DIR=""` so tiktoken never writes (or reads) a download cache.

Session fixtures (all return callables, cached for the session):

  shared_path(rel) -> Path        skips, with the full path in the reason, when the file is missing
  tiktoken_oracle(name) -> tiktoken.Encoding
                                  r50k_base / gpt2 / p50k_base / cl100k_base / o200k_base, built offline
                                  from the local rank files; pat_str and special tokens are taken from
                                  tiktoken_ext.openai_public with its loaders stubbed out (no download)
  ours(name) -> tltok_jit encoding  `tltok_jit.get_encoding(name)`, imported lazily

`--run-slow` enables tests marked `slow` (long differential runs).
`TLTOK_REQUIRE_IMPL=1` turns the "tltok_jit.get_encoding does not exist yet" skip into a failure.
"""

from __future__ import annotations

import functools
import os
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TLTOK_SHARED") or (REPO.parent / "shared")).resolve()

if "TLTOK_DATA" not in os.environ and (SHARED / "tokenizers").is_dir():
    os.environ["TLTOK_DATA"] = str(SHARED / "tokenizers")
os.environ["TIKTOKEN_CACHE_DIR"] = ""
# Test the kernels, not the Python encoder that answers while a background worker compiles them
# (tests/test_interim.py and tests/test_cold_start.py test that path on purpose).
os.environ.setdefault("TLTOK_COMPILE", "foreground")

# Encoding name -> rank file (relative to the shared folder).
TIKTOKEN_FILES = {
    "r50k_base": "tokenizers/tiktoken/r50k_base.tiktoken",
    "gpt2": "tokenizers/tiktoken/r50k_base.tiktoken",  # same ranks as gpt2's encoder.json/vocab.bpe
    "p50k_base": "tokenizers/tiktoken/p50k_base.tiktoken",
    "cl100k_base": "tokenizers/tiktoken/cl100k_base.tiktoken",
    "o200k_base": "tokenizers/tiktoken/o200k_base.tiktoken",
}


# --------------------------------------------------------------------------------------------
# --run-slow
# --------------------------------------------------------------------------------------------


def pytest_addoption(parser):
    parser.addoption(
        "--run-slow",
        action="store_true",
        default=False,
        help="run tests marked slow (long differential runs)",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long differential runs (deselected unless --run-slow)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip_slow = pytest.mark.skip(reason="slow test: pass --run-slow to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


# --------------------------------------------------------------------------------------------
# helpers (plain functions, wrapped by the session fixtures below)
# --------------------------------------------------------------------------------------------


def get_shared_path(rel: str | os.PathLike) -> Path:
    """Absolute path of a file in the shared folder; pytest.skip (loudly, full path) if missing."""
    p = SHARED / rel
    if not p.exists():
        pytest.skip(f"shared data file missing: {p} (set TLTOK_SHARED to the shared folder)")
    return p


def tiktoken_params(name: str) -> dict:
    """The constructor dict of tiktoken_ext.openai_public.<name>, without loading any ranks.

    The constructor's code is run against a copy of its module globals in which the rank loaders
    are stubs returning {}, so nothing is downloaded and the module itself is not modified; the
    pat_str and special tokens are exactly tiktoken's own."""
    import tiktoken_ext.openai_public as op

    fn = getattr(op, name)
    g = dict(fn.__globals__)
    g["load_tiktoken_bpe"] = lambda *a, **k: {}
    g["data_gym_to_mergeable_bpe_ranks"] = lambda *a, **k: {}
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)()


@functools.lru_cache(maxsize=None)
def _build_oracle(name: str, path: str):
    import tiktoken
    import tiktoken.load

    params = tiktoken_params(name)
    params["mergeable_ranks"] = tiktoken.load.load_tiktoken_bpe(path)
    return tiktoken.Encoding(**params)


def get_tiktoken_oracle(name: str):
    if name not in TIKTOKEN_FILES:
        raise ValueError(f"no offline tiktoken oracle for {name!r}; known: {sorted(TIKTOKEN_FILES)}")
    path = get_shared_path(TIKTOKEN_FILES[name])
    return _build_oracle(name, str(path))


@functools.lru_cache(maxsize=None)
def _load_ours(name: str):
    import tltok_jit  # a genuine ImportError (broken package) propagates as an error

    get_encoding = getattr(tltok_jit, "get_encoding", None)
    if get_encoding is None:
        return None
    return get_encoding(name)


def get_ours(name: str):
    if name in TIKTOKEN_FILES:
        get_shared_path(TIKTOKEN_FILES[name])  # skip, naming the file, rather than try to download it
    enc = _load_ours(name)
    if enc is None:
        msg = "tltok_jit.get_encoding does not exist yet (package incomplete)"
        if os.environ.get("TLTOK_REQUIRE_IMPL"):
            pytest.fail(msg)
        pytest.skip(msg)
    return enc


# --------------------------------------------------------------------------------------------
# session fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"shared data folder missing: {SHARED} (set TLTOK_SHARED)")
    return SHARED


@pytest.fixture(scope="session")
def shared_path():
    return get_shared_path


@pytest.fixture(scope="session")
def tiktoken_oracle():
    return get_tiktoken_oracle


@pytest.fixture(scope="session")
def ours():
    return get_ours
