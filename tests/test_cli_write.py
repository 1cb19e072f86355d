"""How `tltok encode` writes Parquet: the ids PLAIN without a dictionary (or as `--ids-encoding` says),
the kept columns with Parquet's defaults, the codec of `--compression`, and the refusals of both flags."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("tiktoken")

from conftest import FIXTURES  # noqa: E402

from tltok_jit.integrations.parquet_write import CODECS, IDS_ENCODINGS, leaf_paths, writer_options  # noqa: E402


@pytest.fixture(scope="module")
def parquet_in(tmp_path_factory):
    texts = pq.read_table(FIXTURES / "sample.parquet")["text"].to_pylist()
    texts[1] = None
    p = tmp_path_factory.mktemp("in") / "in.parquet"
    pq.write_table(pa.table({"id": list(range(len(texts))), "text": texts}), p)
    return p, texts


@pytest.fixture
def cli(cli_main):
    return cli_main


def _columns(path) -> dict:
    md = pq.ParquetFile(path).metadata.row_group(0)
    return {md.column(i).path_in_schema: md.column(i) for i in range(md.num_columns)}


def test_leaf_paths_and_options():
    schema = pa.schema([("id", pa.int64()), ("meta", pa.struct([("a", pa.string()), ("b", pa.list_(pa.int32()))])),
                        ("tokens", pa.list_(pa.uint32()))])
    assert leaf_paths(schema.field("meta")) == ["meta.a", "meta.b.list.element"]
    kept = ["id", "meta.a", "meta.b.list.element"]
    assert writer_options(schema, {"tokens"}) == {"compression": "zstd", "use_dictionary": kept}
    assert writer_options(schema, {"tokens"}, "lz4", "dictionary") == {
        "compression": "lz4", "use_dictionary": kept + ["tokens.list.element"]}
    assert writer_options(schema, {"tokens"}, "zstd", "byte_stream_split") == {
        "compression": "zstd", "use_dictionary": kept, "use_byte_stream_split": ["tokens.list.element"]}
    counts = pa.schema([("n_tokens", pa.int64())])
    assert writer_options(counts, {"n_tokens"}, "zstd", "byte_stream_split") == {"compression": "zstd",
                                                                                "use_dictionary": []}


@pytest.mark.parametrize("codec,ids_encoding", [(c, "plain") for c in CODECS]
                         + [("zstd", e) for e in IDS_ENCODINGS if e != "plain"])
def test_codecs_and_encodings_write_the_same_ids(cli, parquet_in, tmp_path, tiktoken_oracle, codec, ids_encoding):
    src, texts = parquet_in
    out = tmp_path / "out.parquet"
    cli("encode", src, "-o", out, "--keep-columns", "id", "--threads", "2", "--compression", codec,
        "--ids-encoding", ids_encoding, "--quiet")
    enc = tiktoken_oracle("o200k_base")
    t = pq.read_table(out)
    assert t.schema.field("tokens").type == pa.list_(pa.uint32())
    assert t["tokens"].to_pylist() == [None if s is None else enc.encode_ordinary(s) for s in texts]
    cols = _columns(out)
    ids, kept = cols["tokens.list.element"], cols["id"]
    assert ids.compression == ("UNCOMPRESSED" if codec == "none" else codec.upper())
    assert ("RLE_DICTIONARY" in ids.encodings) == (ids_encoding == "dictionary")
    assert ("BYTE_STREAM_SPLIT" in ids.encodings) == (ids_encoding == "byte_stream_split")
    assert "RLE_DICTIONARY" in kept.encodings


@pytest.mark.parametrize("ids_encoding", IDS_ENCODINGS)
def test_other_readers(cli, parquet_in, tmp_path, ids_encoding):
    """polars and duckdb read the ids as pyarrow does (BYTE_STREAM_SPLIT integers: their recent releases)."""
    src, _ = parquet_in
    out = tmp_path / "out.parquet"
    cli("encode", src, "-o", out, "--ids-encoding", ids_encoding, "--quiet")
    want = pq.read_table(out)["tokens"].to_pylist()
    pl = pytest.importorskip("polars")
    assert pl.read_parquet(out)["tokens"].to_list() == want
    duckdb = pytest.importorskip("duckdb")
    assert [r[0] for r in duckdb.sql(f"select tokens from '{out}'").fetchall()] == want


def test_count_only_and_packed_rows(cli, parquet_in, tmp_path):
    src, _ = parquet_in
    counts = tmp_path / "counts.parquet"
    cli("encode", src, "-o", counts, "--count-only", "--compression", "snappy", "--quiet")
    col = _columns(counts)["n_tokens"]
    assert col.compression == "SNAPPY" and "RLE_DICTIONARY" not in col.encodings
    packed = tmp_path / "packed.parquet"
    cli("encode", src, "-o", packed, "--pack", 64, "--strategy", "concat", "--compression", "lz4", "--quiet")
    assert {c.compression for c in _columns(packed).values()} == {"LZ4"}


def test_refusals(cli, parquet_in, tmp_path):
    src, _ = parquet_in
    e = cli("encode", src, "-o", tmp_path / "a.parquet", "--compression", "gzip", rc=2)
    assert "--compression" in e and "'gzip'" in e and "zstd, lz4, snappy, none" in e
    e = cli("encode", src, "-o", tmp_path / "a.bin", "--format", "bin", "--compression", "lz4", rc=2)
    assert "--compression only applies to Parquet output" in e and "--format bin" in e
    e = cli("encode", src, "-o", tmp_path / "a.bin", "--pack", 16, "--compression", "zstd", rc=2)
    assert "--compression" in e and "--pack without --strategy" in e
    e = cli("encode", src, "-o", tmp_path / "d", "--ray", "--compression", "lz4", rc=2)
    assert "--compression" in e and "--ray" in e
    e = cli("encode", src, "-o", tmp_path / "a.parquet", "--ids-encoding", "delta", rc=2)
    assert "--ids-encoding" in e and "'delta'" in e and "plain, dictionary, byte_stream_split" in e
    for extra in (["--count-only"], ["--pad-to", 8], ["--pack", 16, "--strategy", "concat"]):
        e = cli("encode", src, "-o", tmp_path / "a.parquet", "--ids-encoding", "dictionary", *extra, rc=2)
        assert "--ids-encoding only applies" in e
    e = cli("encode", src, "-o", tmp_path / "d", "--ray", "--ids-encoding", "byte_stream_split", rc=2)
    assert "--ids-encoding" in e and "--ray" in e
    assert not list(tmp_path.iterdir())
