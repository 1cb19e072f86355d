"""Dataframe UDFs: polars namespace, DuckDB Arrow UDFs, pyarrow.compute functions (tltok_jit.udf)."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("tiktoken")

from conftest import FIXTURES, SHARED  # noqa: E402

TEXTS = ["Hello world", None, "日本語のテキスト。", "", "x <|endoftext|> y", "it's 2024!\n\n  end"]


@pytest.fixture(scope="module")
def oracle(tiktoken_oracle):
    return tiktoken_oracle("o200k_base")


@pytest.fixture(scope="module")
def enc(ours):
    return ours("o200k_base")


def _exp(oracle, texts, special="text"):
    if special == "allow":
        return [None if t is None else oracle.encode(t, allowed_special="all") for t in texts]
    return [None if t is None else oracle.encode_ordinary(t) for t in texts]


@pytest.fixture(scope="module")
def corpus_parquet(tmp_path_factory):
    p = SHARED / "corpora" / "english-war-and-peace.txt"
    if p.exists():
        text = p.read_text(encoding="utf-8")[:400_000]
    else:  # the committed UDHR sample (106 languages), so the UDFs are still checked on real text
        text = "".join(pq.read_table(FIXTURES / "sample.parquet")["text"].to_pylist())
    docs = [text[i:i + 1200] for i in range(0, len(text), 1200)]
    docs[5] = None
    out = tmp_path_factory.mktemp("udf") / "data.parquet"
    pq.write_table(pa.table({"text": docs}), out, row_group_size=64)
    return out, docs


# ------------------------------------------------------------------------------------------------
# polars
# ------------------------------------------------------------------------------------------------

def test_polars_namespace(enc, oracle):
    pl = pytest.importorskip("polars", reason="polars not installed (pip install .[test])")
    from tltok_jit.udf import register_polars

    register_polars()
    register_polars()  # idempotent
    df = pl.DataFrame({"text": TEXTS})
    out = df.with_columns(ids=pl.col("text").tltok.encode("o200k_base"),
                          n=pl.col("text").tltok.count("o200k_base"),
                          ids_sp=pl.col("text").tltok.encode(enc, special="allow"))
    assert out.schema["ids"] == pl.List(pl.UInt32)
    assert out.schema["n"] == pl.Int64
    assert out["ids"].to_list() == _exp(oracle, TEXTS)
    assert out["n"].to_list() == [None if e is None else len(e) for e in _exp(oracle, TEXTS)]
    assert out["ids_sp"].to_list() == _exp(oracle, TEXTS, "allow")
    back = out.select(pl.col("ids").tltok.decode("o200k_base"))
    assert back["ids"].to_list() == TEXTS
    assert df["text"].tltok.encode().to_list() == _exp(oracle, TEXTS)
    assert df["text"].tltok.count().to_list() == out["n"].to_list()
    with pytest.raises(Exception, match="row 4"):
        df.select(pl.col("text").tltok.encode(special="error"))


def test_polars_lazy_parquet(corpus_parquet, oracle):
    pl = pytest.importorskip("polars", reason="polars not installed (pip install .[test])")
    from tltok_jit.udf import register_polars

    register_polars()
    path, docs = corpus_parquet
    got = pl.scan_parquet(path).select(n=pl.col("text").tltok.count()).collect()["n"].to_list()
    assert got == [None if d is None else len(oracle.encode_ordinary(d)) for d in docs]


# ------------------------------------------------------------------------------------------------
# DuckDB
# ------------------------------------------------------------------------------------------------

def test_duckdb_sql(corpus_parquet, oracle):
    duckdb = pytest.importorskip("duckdb", reason="duckdb not installed (pip install .[test])")
    from tltok_jit.udf import register_duckdb

    path, docs = corpus_parquet
    con = duckdb.connect()
    register_duckdb(con, "o200k_base")
    exp = [None if d is None else len(oracle.encode_ordinary(d)) for d in docs]
    got = [r[0] for r in con.sql(f"SELECT tltok_count(text) FROM '{path}'").fetchall()]
    assert got == exp
    assert con.execute(f"SELECT sum(tltok_count(text)) FROM '{path}'").fetchall()[0][0] == sum(e for e in exp if e)
    rows = con.sql(f"SELECT tltok_encode(text), tltok_decode(tltok_encode(text)) FROM '{path}' LIMIT 20").fetchall()
    assert [r[0] for r in rows] == _exp(oracle, docs[:20])
    assert [r[1] for r in rows] == docs[:20]
    register_duckdb(con, "o200k_base")  # re-registering replaces
    con.execute("CREATE TABLE t (s VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?)", [[x] for x in TEXTS])
    assert [r[0] for r in con.sql("SELECT tltok_encode(s) FROM t").fetchall()] == _exp(oracle, TEXTS)


# ------------------------------------------------------------------------------------------------
# pyarrow.compute
# ------------------------------------------------------------------------------------------------

def test_pyarrow_compute(oracle):
    import pyarrow.compute as pc

    from tltok_jit.udf import register_pyarrow

    names = register_pyarrow("o200k_base")
    assert register_pyarrow("o200k_base") == names  # idempotent
    arr = pa.array(TEXTS)
    assert pc.call_function("tltok_encode", [arr]).to_pylist() == _exp(oracle, TEXTS)
    assert pc.call_function("tltok_count", [arr]).to_pylist() == [None if e is None else len(e)
                                                                   for e in _exp(oracle, TEXTS)]
    large = pa.array(TEXTS, type=pa.large_string())
    got = pc.call_function("tltok_encode_large", [large])
    assert got.type == pa.large_list(pa.uint32()) and got.to_pylist() == _exp(oracle, TEXTS)
    assert pc.call_function("tltok_count_large", [large]).to_pylist() == \
        pc.call_function("tltok_count", [arr]).to_pylist()
    assert pc.call_function("tltok_decode", [pc.call_function("tltok_encode", [arr])]).to_pylist() == TEXTS
    with pytest.raises(ValueError, match="already registered"):
        register_pyarrow("cl100k_base")
    names2 = register_pyarrow("cl100k_base", prefix="tltok_cl100k")
    assert "tltok_cl100k_count" in names2
    with pytest.raises(ValueError, match="special"):
        register_pyarrow("o200k_base", special="maybe")
