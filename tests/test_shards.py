"""Training shards: Megatron-LM indexed datasets and flat token files, read back from the published layouts."""

from __future__ import annotations

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

from shard_readers import read_flat, read_megatron  # noqa: E402

from tltok_jit.integrations import shards  # noqa: E402

TEXTS = [
    "Hello world, this is the first document.",
    "",
    "Second: ünïcödé, 日本語のテキスト, emoji 🎉🎉 and numbers 1234567.",
    None,
    "  leading spaces\n\nand blank lines\n",
    "<|endoftext|> stays text here",
    "x",
]


def _expected(enc, texts, eos=None) -> list[list[int]]:
    """Megatron's rule: a document without ids is skipped, EOS appended to every other one."""
    present = [t for t in texts if t is not None]
    out = []
    for ids in enc.encode_batch(present, num_threads=1, disallowed_special=()):
        if ids:
            out.append(ids + ([eos] if eos is not None else []))
    return out


@pytest.fixture(scope="module", params=["r50k_base", "o200k_base"])
def enc(request, ours):
    return ours(request.param)


def _ids_column(enc, texts):
    return enc.encode_arrow(pa.array(texts, type=pa.string()), num_threads=1, disallowed_special=())


@pytest.mark.parametrize("eos", [False, True])
def test_megatron_round_trip(tmp_path, enc, eos):
    eos_id = enc.eot_token if eos else None
    with shards.MegatronWriter(tmp_path / "ds", n_vocab=enc.n_vocab, eos_id=eos_id, encoding=enc.name) as w:
        w.add(_ids_column(enc, TEXTS[:3]))   # two batches: offsets continue across them
        w.add(_ids_column(enc, TEXTS[3:]))
    dtype, docs = read_megatron(tmp_path / "ds")
    assert dtype == (np.uint16 if enc.n_vocab < 65500 else np.int32)
    assert [d.tolist() for d in docs] == _expected(enc, TEXTS, eos_id)
    assert w.skipped_empty == 2 and w.n_documents == len(docs) == 5
    if eos:
        assert all(d[-1] == eos_id for d in docs)
        assert sum(int((d == eos_id).sum()) for d in docs) == len(docs)  # "<|endoftext|>" text is not the id


@pytest.mark.parametrize("eos", [False, True])
def test_flat_round_trip(tmp_path, enc, eos):
    eos_id = enc.eot_token if eos else None
    with shards.FlatBinWriter(tmp_path / "train.bin", n_vocab=enc.n_vocab, eos_id=eos_id, encoding=enc.name) as w:
        w.add_texts(enc, TEXTS[:4], num_threads=1, disallowed_special=())
        w.add([enc.encode_ordinary(t) for t in TEXTS[4:]])  # plain Python lists too
    meta, ids = read_flat(tmp_path / "train")
    exp = _expected(enc, TEXTS, eos_id)
    assert ids.tolist() == [i for d in exp for i in d]
    assert meta["dtype"] == ("uint16" if enc.n_vocab <= 65536 else "uint32")
    assert meta["n_documents"] == len(exp) and meta["encoding"] == enc.name
    assert meta["eos"] is eos and meta["eos_id"] == eos_id and meta["n_vocab"] == enc.n_vocab
    if eos:
        ends = np.flatnonzero(ids == eos_id)
        assert len(ends) == len(exp) and ends[-1] == len(ids) - 1
        docs = np.split(ids, ends + 1)[:-1]
        assert [d.tolist() for d in docs] == exp


def test_dtype_choice():
    assert shards.megatron_dtype(50257) == np.uint16
    assert shards.megatron_dtype(65499) == np.uint16
    assert shards.megatron_dtype(65500) == np.int32       # Megatron's threshold, not 65536
    assert shards.megatron_dtype(200019) == np.int32
    assert shards.flat_dtype(65536) == np.uint16
    assert shards.flat_dtype(65537) == np.uint32


def test_large_vocab_ids_above_uint16(tmp_path, ours):
    enc = ours("o200k_base")
    text = "Привет мир, नमस्ते दुनिया, 안녕하세요 세계"
    exp = enc.encode_ordinary(text)
    assert max(exp) >= 65536  # the test needs ids that a uint16 would corrupt
    shards.write_documents(tmp_path / "m", [[exp]], fmt="megatron", n_vocab=enc.n_vocab)
    shards.write_documents(tmp_path / "f", [[exp]], fmt="bin", n_vocab=enc.n_vocab)
    dtype, docs = read_megatron(tmp_path / "m")
    assert dtype == np.int32 and docs[0].tolist() == exp
    meta, ids = read_flat(tmp_path / "f")
    assert meta["dtype"] == "uint32" and ids.tolist() == exp


def test_all_empty_and_no_documents(tmp_path):
    with shards.MegatronWriter(tmp_path / "e", n_vocab=50257, eos_id=50256) as w:
        w.add([[], None, []])
    dtype, docs = read_megatron(tmp_path / "e")
    assert docs == [] and w.skipped_empty == 3
    assert (tmp_path / "e.bin").stat().st_size == 0
    shards.write_documents(tmp_path / "f", [], fmt="bin", n_vocab=50257)
    meta, ids = read_flat(tmp_path / "f")
    assert meta["n_tokens"] == 0 and meta["n_documents"] == 0


def test_abort_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError):
        with shards.MegatronWriter(tmp_path / "ds", n_vocab=50257) as w:
            w.add([[1, 2, 3]])
            assert not (tmp_path / "ds.idx").exists() and not (tmp_path / "ds.bin").exists()
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_unfinalized_writer_has_no_index(tmp_path):
    w = shards.FlatBinWriter(tmp_path / "t", n_vocab=50257)
    w.add([[5, 6]])
    names = [p.name for p in tmp_path.iterdir()]
    assert names == [f".t.bin{shards.TMP_TAG}{__import__('os').getpid()}"]
    w.finalize()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.bin", "t.json"]


def test_bad_ids_and_arguments(tmp_path):
    with shards.MegatronWriter(tmp_path / "ds", n_vocab=100) as w:
        with pytest.raises(ValueError, match="token id 100 is outside the vocabulary of 100"):
            w.add([[1, 100]])
        with pytest.raises(ValueError, match="token id -1"):
            w.add([[-1]])
    with pytest.raises(ValueError, match="eos_id 100"):
        shards.FlatBinWriter(tmp_path / "x", n_vocab=100, eos_id=100)
    with pytest.raises(ValueError, match="cannot hold"):
        shards.MegatronWriter(tmp_path / "y", n_vocab=70000, dtype=np.uint16)
    with pytest.raises(ValueError, match="unknown shard format 'npy'"):
        shards.write_documents(tmp_path / "z", [], fmt="npy", n_vocab=100)
