"""Shared test configuration: the shared data folder, tiktoken oracles built offline, our encodings.

Data location: env `TLTOK_SHARED`, else `<repo>/../shared`. `TLTOK_DATA` is set to its `tokenizers/`
folder when unset (that is how `tltok_jit.get_encoding` finds the rank files), and
`TIKTOKEN_CACHE_DIR=""` so tiktoken never writes (or reads) a download cache.

Without the shared folder, the files that have a committed stand-in with the same bytes are taken from
it: the tokenizer files copied into `fixtures/` (GPT-2, SmolLM2) and the rank files embedded in the
package (r50k_base, cl100k_base, o200k_base; written once per session to a temporary folder, laid out as
`tokenizers/tiktoken/<file>`). Everything else skips, naming the file and README.md's section on it.

Session fixtures (all return callables, cached for the session):

  shared_path(rel) -> Path        the shared file, else its committed stand-in; skips, with the full path
                                  in the reason, when neither exists
  tiktoken_oracle(name) -> tiktoken.Encoding
                                  r50k_base / gpt2 / p50k_base / cl100k_base / o200k_base, built offline
                                  from the local rank files; pat_str and special tokens are taken from
                                  tiktoken_ext.openai_public with its loaders stubbed out (no download)
  ours(name) -> tltok_jit encoding  `tltok_jit.get_encoding(name)`, imported lazily

`--run-slow` enables tests marked `slow` (long differential runs).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from golden import tiktoken_params, write_embedded_rank_file  # noqa: F401  (tiktoken_params: re-exported)

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TLTOK_SHARED") or (REPO.parent / "shared")).resolve()
FIXTURES = REPO / "fixtures"
README_SECTION = "README.md, section 'Test data (../shared)'"

if "TLTOK_DATA" not in os.environ and (SHARED / "tokenizers").is_dir():
    os.environ["TLTOK_DATA"] = str(SHARED / "tokenizers")
os.environ["TIKTOKEN_CACHE_DIR"] = ""
# Test the kernels, not the Python encoder that answers while a background worker compiles them
# (tests/test_interim.py and tests/test_cold_start.py test that path on purpose).
os.environ.setdefault("TLTOK_COMPILE", "foreground")
SESSION_TLTOK_DATA = os.environ.get("TLTOK_DATA", "")  # as the session started (tests monkeypatch it)

# Encoding name -> rank file (relative to the shared folder).
TIKTOKEN_FILES = {
    "r50k_base": "tokenizers/tiktoken/r50k_base.tiktoken",
    "gpt2": "tokenizers/tiktoken/r50k_base.tiktoken",  # same ranks as gpt2's encoder.json/vocab.bpe
    "p50k_base": "tokenizers/tiktoken/p50k_base.tiktoken",
    "cl100k_base": "tokenizers/tiktoken/cl100k_base.tiktoken",
    "o200k_base": "tokenizers/tiktoken/o200k_base.tiktoken",
}

# Shared files with a committed copy of the same bytes in fixtures/.
FIXTURE_COPIES = {
    "tokenizers/tiktoken/whisper_multilingual.tiktoken": FIXTURES / "whisper" / "multilingual.tiktoken",
}
# Shared files with a committed xz-compressed copy (fixtures/shared/<path>.xz: the same bytes once
# decompressed, each checked against its sha256 here), so the suite checks them without ../shared.
FIXTURE_XZ = {
    "tokenizers/sentencepiece/botchan_en_bpe_1000.model":
        "c8636a43e913dad9d5eb5d2eee2077706a55589fd2d6caf1e7ee4a7d03e4360a",
    "tokenizers/sentencepiece/botchan_en_unigram_1000.model":
        "f8c7e5e0fa9e948783d20ea9dccf0e2611f567bc1a4e468a658becd5015f458e",
    "tokenizers/smollm2/tokenizer.json": "7d27c493c729a66ecefc837280b05d948b1ed50d130eebdbf911b1b36cf38ed7",
    "tokenizers/gpt2/tokenizer.json": "cda20b8ca044949aa07ac4078420c80d1a57139d5f9f33700e46fb2d891e7c66",
    "tokenizers/gpt2/vocab.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "tokenizers/gpt2/merges.txt": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    "tokenizers/mistral-7b/tokenizer.json": "fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc",
}
# Shared rank files the package embeds (tltok_jit/data/), by stem.
EMBEDDED_RANK_FILES = {f"tokenizers/tiktoken/{s}.tiktoken": s for s in ("r50k_base", "cl100k_base", "o200k_base")}


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


@functools.lru_cache(maxsize=None)
def _stand_in_dir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="tltok-test-data-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


def stand_in(rel: str | os.PathLike) -> Path | None:
    """The committed stand-in of shared file `rel` (a fixtures/ copy, or the package's embedded rank file
    written to a temporary folder), or None if it has none."""
    rel = Path(rel).as_posix()
    if rel in FIXTURE_COPIES and FIXTURE_COPIES[rel].is_file():
        return FIXTURE_COPIES[rel]
    if rel in FIXTURE_XZ:
        return _decompressed(rel)
    if rel in EMBEDDED_RANK_FILES:
        try:
            return write_embedded_rank_file(EMBEDDED_RANK_FILES[rel], _stand_in_dir() / Path(rel).parent)
        except LookupError:
            return None
    return None


@functools.lru_cache(maxsize=None)
def _decompressed(rel: str) -> Path | None:
    import hashlib
    import lzma

    src = FIXTURES / "shared" / (rel + ".xz")
    if not src.is_file():
        return None
    data = lzma.decompress(src.read_bytes())
    if hashlib.sha256(data).hexdigest() != FIXTURE_XZ[rel]:
        raise AssertionError(f"{src} does not decompress to the shared file's bytes (sha256 {FIXTURE_XZ[rel]})")
    dest = _stand_in_dir() / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    return dest


def missing_reason(p: Path) -> str:
    if p.name == "p50k_base.tiktoken":
        return (f"rank file missing: {p}; p50k_base / p50k_edit have no copy in the package (only r50k_base, "
                f"cl100k_base and o200k_base do): put p50k_base.tiktoken there or in a TLTOK_DATA folder, "
                f"see {README_SECTION}")
    return f"shared data file missing: {p} (no committed copy in fixtures/; set TLTOK_SHARED, see {README_SECTION})"


def _in_tltok_data(rel: str | os.PathLike) -> Path | None:
    """A rank file `tokenizers/tiktoken/<file>` found where the registry looks in the session's TLTOK_DATA."""
    rel = Path(rel)
    if rel.parent.as_posix() != "tokenizers/tiktoken":
        return None
    for d in SESSION_TLTOK_DATA.split(os.pathsep):
        for cand in (Path(d) / rel.name, Path(d) / "tiktoken" / rel.name) if d else ():
            if cand.is_file():
                return cand
    return None


def get_shared_path(rel: str | os.PathLike) -> Path:
    """Absolute path of a file in the shared folder (for a rank file: or in a TLTOK_DATA folder), else of
    its committed stand-in (same bytes); pytest.skip (loudly, full path) if none exists."""
    p = SHARED / rel
    if p.exists():
        return p
    alt = _in_tltok_data(rel) or stand_in(rel)
    if alt is None:
        pytest.skip(missing_reason(p))
    return alt


def has_shared_file(rel: str | os.PathLike) -> bool:
    """Whether `get_shared_path(rel)` finds a file (for choosing parameters at collection)."""
    return ((SHARED / rel).exists() or _in_tltok_data(rel) is not None
            or Path(rel).as_posix() in FIXTURE_COPIES.keys() | EMBEDDED_RANK_FILES.keys() | FIXTURE_XZ.keys())


@functools.lru_cache(maxsize=None)
def _build_oracle(name: str, path: str):
    from golden import build_tiktoken_oracle

    return build_tiktoken_oracle(name, Path(path))


def get_tiktoken_oracle(name: str):
    if name not in TIKTOKEN_FILES:
        raise ValueError(f"no offline tiktoken oracle for {name!r}; known: {sorted(TIKTOKEN_FILES)}")
    path = get_shared_path(TIKTOKEN_FILES[name])
    return _build_oracle(name, str(path))


def get_ours(name: str):
    if name in TIKTOKEN_FILES:
        get_shared_path(TIKTOKEN_FILES[name])  # skip, naming the file, rather than try to download it
    import tltok_jit

    return tltok_jit.get_encoding(name)


# --------------------------------------------------------------------------------------------
# session fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"shared data folder missing: {SHARED} (set TLTOK_SHARED, see {README_SECTION})")
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


@pytest.fixture
def cli_main(capsys, monkeypatch):
    """run(*argv, rc=0): `tltok` in this process; asserts its exit status and, for a refusal (2), that
    stderr is one line without a traceback; returns stderr."""
    from tltok_jit.integrations import cli as C

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")

    def run(*argv, rc=0):
        capsys.readouterr()
        assert C.main([str(a) for a in argv]) == rc
        err = capsys.readouterr().err
        if rc == 2:
            assert err.count("\n") == 1 and "Traceback" not in err, err
        return err

    return run
