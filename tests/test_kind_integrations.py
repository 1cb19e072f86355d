"""The integrations with a WordPiece tokenizer.json (a registry-kind tokenizer, not an Encoding):
`tltok encode --tokenizer` ids, counts, cut and fixed-size rows equal HF `tokenizers`' ids of each row;
the flags these tokenizers cannot honour are refused by name; the job pickles to Ray workers by its
file path (the cluster run: tests/test_ray_cli.py); Ray Data's batch callable takes the file."""

from __future__ import annotations

import pickle

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
tokenizers = pytest.importorskip("tokenizers")

from conftest import FIXTURES, get_shared_path  # noqa: E402


@pytest.fixture(scope="module")
def minilm():
    return str(get_shared_path("tokenizers/minilm/tokenizer.json"))


@pytest.fixture(scope="module")
def hf_ids(minilm):
    hf = tokenizers.Tokenizer.from_file(minilm)
    hf.no_truncation()
    hf.no_padding()
    return lambda t: None if t is None else hf.encode(t, add_special_tokens=False).ids


@pytest.fixture(scope="module")
def parquet_in(tmp_path_factory):
    rows = pq.read_table(FIXTURES / "sample.parquet")["text"].to_pylist()[:30]
    rows += ["", None, "[CLS] added tokens [SEP] are matched", "naïve Café 中文"]
    p = tmp_path_factory.mktemp("in") / "rows.parquet"
    pq.write_table(pa.table({"text": pa.array(rows, pa.string())}), p)
    return p, rows


@pytest.fixture
def cli():
    from tltok_jit.integrations import cli as C

    return lambda *argv: C.main([str(a) for a in argv])


def test_ids_counts_and_cut_rows_equal_hf(cli, minilm, hf_ids, parquet_in, tmp_path):
    path, rows = parquet_in
    want = [hf_ids(t) for t in rows]
    assert cli("encode", path, "-o", tmp_path / "ids.parquet", "--tokenizer", minilm, "--quiet") == 0
    assert pq.read_table(tmp_path / "ids.parquet")["tokens"].to_pylist() == want
    assert cli("encode", path, "-o", tmp_path / "n.parquet", "--tokenizer", minilm, "--count-only", "--quiet") == 0
    assert pq.read_table(tmp_path / "n.parquet")["n_tokens"].to_pylist() == [None if w is None else len(w)
                                                                               for w in want]
    assert cli("encode", path, "-o", tmp_path / "cut.parquet", "--tokenizer", minilm, "--max-length", 5,
               "--truncation-side", "left", "--quiet") == 0
    assert pq.read_table(tmp_path / "cut.parquet")["tokens"].to_pylist() == [None if w is None else w[-5:]
                                                                             for w in want]
    assert cli("encode", path, "-o", tmp_path / "pad.parquet", "--tokenizer", minilm, "--pad-to", 8, "--quiet") == 0
    got = pq.read_table(tmp_path / "pad.parquet")
    for ids, mask, w in zip(got["tokens"].to_pylist(), got["attention_mask"].to_pylist(), want):
        if w is None:
            assert ids is None and mask is None
        else:
            assert ids == w[:8] + [0] * (8 - len(w[:8])) and mask == [1] * len(w[:8]) + [0] * (8 - len(w[:8]))


@pytest.mark.parametrize("flags, message", [
    (["--special", "error"], "--special error: this tokenizer (minilm) always matches its added tokens"),
    (["--special", "text"], "--special text"),
    (["--format", "megatron", "--eos"], "has no <|endoftext|> token for --eos"),
])
def test_flags_it_cannot_honour_are_named(cli, minilm, parquet_in, tmp_path, capsys, flags, message):
    assert cli("encode", parquet_in[0], "-o", tmp_path / "o", "--tokenizer", minilm, *flags) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "o").exists()


def test_job_pickles_by_path(minilm):
    from tltok_jit.integrations.cli_common import load_encoding

    job = load_encoding(None, minilm)
    again = pickle.loads(pickle.dumps(job))
    col = pa.array(["hello world", None])
    assert again.encode_arrow(col).to_pylist() == job.encode_arrow(col).to_pylist()
    assert again.n_vocab == job.n_vocab == 30522 and again.name == "minilm"


def test_ray_data_callable_takes_a_wordpiece_file(minilm, hf_ids):
    from tltok_jit.ray import TokenizeBatch

    table = pa.table({"text": ["hello world", None, "[SEP] naïve"]})
    out = TokenizeBatch(minilm)(table)
    assert out.column("tokens").to_pylist() == [hf_ids(t) for t in table.column("text").to_pylist()]
    counts = TokenizeBatch(minilm, count_only=True)(table)
    assert counts.column("n_tokens").to_pylist() == [None if t is None else len(hf_ids(t))
                                                     for t in table.column("text").to_pylist()]
    with pytest.raises(TypeError, match="allowed_special"):
        TokenizeBatch(minilm, allowed_special="all")


def test_stream_decoder_names_the_way_for_a_registry_kind(minilm):
    import tltok_jit

    tok = tltok_jit.from_file(minilm)
    with pytest.raises(TypeError, match="decode_incremental"):
        tltok_jit.StreamDecoder(tok)
    ids = tok.encode("hello, naive world [SEP] isn't it?")
    state: dict = {}
    text = "".join(tok.decode_incremental([i], state) for i in ids) + tok.decode_incremental([], state, final=True)
    assert text == tok.decode(ids) == state["text"]


def test_dataframe_udfs_take_a_wordpiece_file(minilm, hf_ids):
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    import tltok_jit
    from tltok_jit.udf import register_duckdb, register_polars

    texts = ["hello world", None, "[SEP] naïve Café 中文"]
    want = [hf_ids(t) for t in texts]
    register_polars()
    df = pl.DataFrame({"text": texts}).with_columns(ids=pl.col("text").tltok.encode(minilm),
                                                    n=pl.col("text").tltok.count(minilm))
    assert df["ids"].to_list() == want
    assert df["n"].to_list() == [None if w is None else len(w) for w in want]
    with pytest.raises(Exception, match="always matches its added tokens"):
        pl.DataFrame({"text": texts}).with_columns(ids=pl.col("text").tltok.encode(minilm, special="error"))
    con = register_duckdb(duckdb.connect(), tltok_jit.from_file(minilm))
    rows = con.execute("SELECT tltok_encode(t) FROM (SELECT unnest(?) AS t)", [texts]).fetchall()
    assert [r[0] for r in rows] == want
