"""Compiled tables saved on disk (tltok_jit.table_cache): a hit gives the very arrays a build gives."""

from __future__ import annotations

import base64
import dataclasses

import numpy as np
import pytest

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
