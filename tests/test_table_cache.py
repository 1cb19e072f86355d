"""Compiled tables saved on disk (tltok_jit.table_cache): a hit gives the very arrays a build gives."""

from __future__ import annotations

import dataclasses

import numpy as np

from tltok_jit import table_cache, tables
from tltok_jit.kernels import jit


def _model(shared_path):
    from conftest import TIKTOKEN_FILES
    from tltok_jit.registry import load_description

    shared_path(TIKTOKEN_FILES["r50k_base"])
    return load_description("r50k_base")


def test_hit_equals_build(shared_path, tmp_path, monkeypatch):
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
