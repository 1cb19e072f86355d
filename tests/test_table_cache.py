"""Compiled tables saved on disk (tltok_jit.tables.cache): a hit gives the very arrays a build gives; the
hash tables go to huge pages (on_huge_pages: copies exact, read-only, on advised memory, or the arrays
themselves when it should not copy)."""

from __future__ import annotations

import base64
import dataclasses
import os
import sys

import numpy as np
import pytest

from smaps import vm_flags
from tltok_jit.tables import cache as table_cache, bpe as tables
from tltok_jit.kernels import jit


def _model(shared_path):
    from conftest import TIKTOKEN_FILES
    from tltok_jit.loaders.known_encodings import load_description

    shared_path(TIKTOKEN_FILES["r50k_base"])
    return load_description("r50k_base")


def _in_anonymous_memory(a) -> bool:
    """False for a view of a file mapped read-only (the table cache's), True for a copy in an anonymous
    writable mapping (pages.on_huge_pages)."""
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return not memoryview(a).readonly


@pytest.mark.parametrize("huge", ["0", "1"])
def test_hit_equals_build(shared_path, tmp_path, monkeypatch, huge):
    """(With huge pages wanted, the hash tables a hit gives are copies, not views of the cached files.)"""
    import mmap

    monkeypatch.setenv("TLTOK_HUGE_PAGES", huge)
    monkeypatch.setattr(jit, "KERNEL_CACHE_DIR", str(tmp_path))
    model = _model(shared_path)
    monkeypatch.setenv("TLTOK_NO_TABLE_CACHE", "1")
    built = tables.compile_model(model)
    monkeypatch.delenv("TLTOK_NO_TABLE_CACHE")
    first = tables.compile_model(model)  # builds and saves
    key = table_cache.fingerprint(model, True)
    assert (tmp_path / "tables" / key / "meta.json").exists()
    hit = tables.compile_model(model)
    for name, a, b, c in zip(built.tables._fields, built.tables, first.tables, hit.tables):
        assert a.dtype == c.dtype and a.shape == c.shape and np.array_equal(a, c), name
        assert np.array_equal(a, b), name
        assert not c.flags.writeable and c.flags.c_contiguous, name
    assert np.array_equal(built.valid, hit.valid)
    assert (built.n_vocab, built.unicode_version) == (hit.n_vocab, hit.unicode_version)
    copied = huge == "1" and hasattr(mmap, "MADV_HUGEPAGE")
    for name in table_cache.RANDOM_ACCESS:
        a = getattr(hit.tables, name)
        if a.nbytes:
            assert _in_anonymous_memory(a) is copied, name
    assert not _in_anonymous_memory(hit.tables.tok_bytes)  # the rest stays shared with the file


def test_another_model_or_a_damaged_folder_rebuilds(shared_path, tmp_path, monkeypatch):
    monkeypatch.setattr(jit, "KERNEL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TLTOK_NO_TABLE_CACHE", raising=False)
    model = _model(shared_path)
    other = dataclasses.replace(model, added_tokens=model.added_tokens[:0])
    assert table_cache.fingerprint(model, True) != table_cache.fingerprint(other, True)
    assert table_cache.fingerprint(model, True) != table_cache.fingerprint(model, False)
    tables.compile_model(model)
    key = table_cache.fingerprint(model, True)
    (tmp_path / "tables" / key / "pair_slots.npy").unlink()
    assert table_cache.load(key, lambda a: a) is None
    again = tables.compile_model(model)  # rebuilt, exact
    assert again.n_vocab == 50257


def test_a_rank_file_with_cached_tables_is_never_parsed(shared_path, tmp_path, monkeypatch):
    """load_description reads the ranks lazily: the table cache keys on the file's digest, so a
    process whose tables are cached never builds the 50,000-entry dict."""
    from conftest import TIKTOKEN_FILES
    from tltok_jit.loaders.tiktoken_file import load_tiktoken_ranks

    monkeypatch.setattr(jit, "KERNEL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TLTOK_NO_TABLE_CACHE", raising=False)
    tables.compile_model(_model(shared_path))  # builds and saves (parses the file)
    model = _model(shared_path)
    assert "vocab" not in vars(model) and model.digest
    hit = tables.compile_model(model)
    assert "vocab" not in vars(model)
    assert hit.n_vocab == 50257
    assert model.vocab == load_tiktoken_ranks(shared_path(TIKTOKEN_FILES["r50k_base"]))  # parsed on access


def test_the_digest_follows_the_file_and_a_bad_file_still_fails(tmp_path):
    from tltok_jit.errors import TokenizerFileError
    from tltok_jit.loaders.tiktoken_file import read_tiktoken_model

    good = b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256))
    kw = dict(name="t", pattern=r"\w+", special_tokens={"<|end|>": 256}, lazy=True)
    a = tmp_path / "a.tiktoken"
    a.write_bytes(good)
    m1 = read_tiktoken_model(a, **kw)
    assert len(m1.vocab) == 256
    a.write_bytes(good.replace(b" 7\n", b" 9\n", 1))  # rank 9 twice, 7 missing
    m2 = read_tiktoken_model(a, **kw)
    assert m2.digest != m1.digest
    assert table_cache.fingerprint(m2, True) != table_cache.fingerprint(m1, True)
    with pytest.raises(TokenizerFileError, match="a.tiktoken"):
        m2.vocab
    m3 = read_tiktoken_model(a, **{**kw, "special_tokens": {"<|end|>": 257}})
    assert m3.digest != m2.digest  # the checks depend on the special ids too


_THP = "/sys/kernel/mm/transparent_hugepage/enabled"


@pytest.mark.parametrize("value, wanted", [("0", False), ("off", False), (" No ", False), ("false", False),
                                           ("1", True), ("yes", True), ("on", True)])
def test_huge_pages_wanted_reads_the_switch(monkeypatch, value, wanted):
    monkeypatch.setenv("TLTOK_HUGE_PAGES", value)
    assert table_cache.huge_pages_wanted() is (wanted and hasattr(__import__("mmap"), "MADV_HUGEPAGE"))


@pytest.mark.parametrize("value", ["2", "maybe", "onn"])
def test_huge_pages_switch_refuses_other_values(monkeypatch, value):
    monkeypatch.setenv("TLTOK_HUGE_PAGES", value)
    with pytest.raises(ValueError, match=f"TLTOK_HUGE_PAGES='{value}': expected one of 0, false"):
        table_cache.huge_pages_wanted()


def test_huge_pages_wanted_unset_follows_the_kernel(monkeypatch):
    monkeypatch.delenv("TLTOK_HUGE_PAGES", raising=False)
    try:
        with open(_THP) as f:
            mode_ok = "[never]" not in f.read()
    except OSError:
        mode_ok = False
    assert table_cache.huge_pages_wanted() is (mode_ok and hasattr(__import__("mmap"), "MADV_HUGEPAGE"))


def _tables():
    rng = np.random.default_rng(5)
    return [rng.integers(0, 2**63, 300_001, dtype=np.uint64), rng.integers(-5, 5, 1001, dtype=np.int32),
            np.empty(0, dtype=np.int32), rng.integers(0, 2**31, (513, 7), dtype=np.int64)]


@pytest.mark.skipif(not sys.platform.startswith("linux") or not os.path.isfile(_THP),
                    reason="Linux with transparent huge pages")
def test_on_huge_pages_copies_onto_advised_memory(monkeypatch):
    monkeypatch.setenv("TLTOK_HUGE_PAGES", "1")
    arrays = _tables()
    copies = table_cache.on_huge_pages(arrays)
    assert len(copies) == len(arrays)
    for a, c in zip(arrays, copies):
        assert c is not a and c.dtype == a.dtype and c.shape == a.shape and np.array_equal(c, a)
        assert not c.flags.writeable and c.ctypes.data % 64 == 0
    assert "hg" in vm_flags(copies[0].ctypes.data)
    ends = sorted((c.ctypes.data, c.ctypes.data + c.nbytes) for c in copies if c.nbytes)
    assert all(e <= s for (_, e), (s, _) in zip(ends, ends[1:]))  # side by side, no overlap


@pytest.mark.parametrize("switch", ["0", "1"])
def test_on_huge_pages_hands_back_what_it_does_not_copy(monkeypatch, switch):
    monkeypatch.setenv("TLTOK_HUGE_PAGES", switch)
    small = [np.arange(1000, dtype=np.int64), np.zeros(10, dtype=np.uint8)]  # under 2 MB together
    assert all(c is a for c, a in zip(table_cache.on_huge_pages(small), small))
    if switch == "0":
        big = _tables()
        assert all(c is a for c, a in zip(table_cache.on_huge_pages(big), big))


def test_tables_shipped_with_the_package_are_read_and_never_changed(shared_path, tmp_path, monkeypatch):
    """The built package carries its default encoding's tables: a process whose kernels are the
    package's loads them from there; a damaged shipped folder is left as it is and the tables are
    built into the user cache instead."""
    import shutil

    from tltok_jit.kernels import numba_cache

    monkeypatch.setattr(jit, "SHIPPED", True)
    monkeypatch.setattr(numba_cache, "SHIPPED_DIR", str(tmp_path / "pkg"))
    monkeypatch.setattr(jit, "KERNEL_CACHE_DIR", str(tmp_path / "user"))
    monkeypatch.delenv("TLTOK_NO_TABLE_CACHE", raising=False)
    model = _model(shared_path)
    built = tables.compile_model(model)
    key = table_cache.fingerprint(model, True)
    (tmp_path / "pkg" / "tables").mkdir(parents=True)
    shutil.move(tmp_path / "user" / "tables" / key, tmp_path / "pkg" / "tables" / key)
    hit = tables.compile_model(model)
    assert not (tmp_path / "user" / "tables" / key).exists()  # read from the package, nothing written
    assert all(np.array_equal(a, b) for a, b in zip(built.tables, hit.tables))
    (tmp_path / "pkg" / "tables" / key / "pair_slots.npy").unlink()
    again = tables.compile_model(model)
    assert again.n_vocab == built.n_vocab and (tmp_path / "pkg" / "tables" / key / "meta.json").exists()
    assert (tmp_path / "user" / "tables" / key / "meta.json").exists()
