"""`tltok encode --max-length / --truncation-side / --pad-to / --pad-id / --padding-side`, and
`--pack N --strategy`: rows cut, padded and packed exactly as tiktoken's ids cut and padded by hand
(packed by `tltok_jit.packing.pack`), and each misuse named by its flag."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("tiktoken")

from conftest import FIXTURES  # noqa: E402

SAMPLE = FIXTURES / "sample.parquet"


@pytest.fixture(scope="module")
def oracle(tiktoken_oracle):
    return tiktoken_oracle("o200k_base")


@pytest.fixture(scope="module")
def texts():
    """The committed sample's rows (106 languages) and rows around the cut: empty, null, one id."""
    rows = pq.read_table(SAMPLE)["text"].to_pylist()[:40]
    return rows + ["", None, "a", "hello world", "<|endoftext|> is text here"]


@pytest.fixture(scope="module")
def parquet_in(tmp_path_factory, texts):
    p = tmp_path_factory.mktemp("in") / "rows.parquet"
    pq.write_table(pa.table({"text": pa.array(texts, pa.string())}), p)
    return p


@pytest.fixture
def cli(monkeypatch):
    from tltok_jit.integrations import cli as C

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    return lambda *argv: C.main([str(a) for a in argv])


def _cut(ids: list[int], n: int, side: str) -> list[int]:
    return ids[:n] if side == "right" else ids[max(len(ids) - n, 0):]


@pytest.mark.parametrize("side", ["right", "left"])
def test_max_length_keeps_the_first_or_last_ids(cli, parquet_in, tmp_path, texts, oracle, side):
    out = tmp_path / "out.parquet"
    assert cli("encode", parquet_in, "-o", out, "--max-length", 7, "--truncation-side", side, "--quiet") == 0
    got = pq.read_table(out)["tokens"].to_pylist()
    assert got == [None if t is None else _cut(oracle.encode_ordinary(t), 7, side) for t in texts]


def test_max_length_caps_counts(cli, parquet_in, tmp_path, texts, oracle):
    out = tmp_path / "out.parquet"
    assert cli("encode", parquet_in, "-o", out, "--max-length", 9, "--count-only", "--quiet") == 0
    got = pq.read_table(out)["n_tokens"].to_pylist()
    assert got == [None if t is None else min(len(oracle.encode_ordinary(t)), 9) for t in texts]


@pytest.mark.parametrize("cut,pad", [("right", "right"), ("left", "left"), ("right", "left")])
def test_pad_to_writes_fixed_size_rows_and_a_mask(cli, parquet_in, tmp_path, texts, oracle, cut, pad):
    out = tmp_path / "out.parquet"
    argv = ["encode", parquet_in, "-o", out, "--pad-to", 12, "--pad-id", 199999, "--truncation-side", cut,
            "--padding-side", pad, "--keep-columns", "text", "--quiet"]
    assert cli(*argv) == 0
    t = pq.read_table(out)
    assert t.column_names == ["text", "tokens", "attention_mask"]
    assert t.schema.field("tokens").type == pa.list_(pa.int32(), 12)
    assert t.schema.field("attention_mask").type == pa.list_(pa.int32(), 12)
    ids, mask = t["tokens"].to_pylist(), t["attention_mask"].to_pylist()
    for text, row, m in zip(texts, ids, mask):
        if text is None:
            assert row is None and m is None
            continue
        kept = _cut(oracle.encode_ordinary(text), 12, cut)
        fill = [199999] * (12 - len(kept))
        assert row == (kept + fill if pad == "right" else fill + kept)
        ones = [1] * len(kept)
        assert m == (ones + [0] * len(fill) if pad == "right" else [0] * len(fill) + ones)
    assert any(len(oracle.encode_ordinary(x)) < 12 for x in texts if x is not None)  # padding happened
    assert any(len(oracle.encode_ordinary(x)) > 12 for x in texts if x is not None)  # and cutting


def test_pad_to_after_a_shorter_max_length(cli, parquet_in, tmp_path, texts, oracle):
    out = tmp_path / "out.parquet"
    assert cli("encode", parquet_in, "-o", out, "--max-length", 3, "--pad-to", 5, "--quiet") == 0
    got = pq.read_table(out)["tokens"].to_pylist()
    assert got[0] == oracle.encode_ordinary(texts[0])[:5]  # --pad-to cuts to its own width


@pytest.mark.parametrize("argv,message", [
    (["--max-length", "0"], "--max-length must be at least 1"),
    (["--pad-to", "-2"], "--pad-to must be at least 1"),
    (["--pad-id", "5"], "--pad-id only applies with --pad-to"),
    (["--padding-side", "left"], "--padding-side only applies with --pad-to"),
    (["--truncation-side", "left"], "--truncation-side only applies with --max-length or --pad-to"),
    (["--pad-to", "8", "--count-only"], "--pad-to and --count-only exclude each other"),
    (["--pad-to", "8", "--pack", "16"], "--pad-to and --pack exclude each other"),
    (["--pad-to", "8", "--max-length", "9"], "--max-length 9 is longer than --pad-to 8"),
    (["--pad-to", "8", "--pad-id", "300000"], "--pad-id 300000 is not a token id of this encoding"),
])
def test_misuse_is_named(cli, parquet_in, tmp_path, capsys, argv, message):
    out = tmp_path / "out.parquet"
    assert cli("encode", parquet_in, "-o", out, *argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("strategy", ["bfd", "concat", "pad"])
def test_pack_strategy_writes_packed_parquet(cli, parquet_in, tmp_path, texts, oracle, strategy, capsys):
    from tltok_jit.packing import pack

    out = tmp_path / "packed.parquet"
    assert cli("encode", parquet_in, "-o", out, "--pack", 64, "--strategy", strategy, "--eos") == 0
    summary = capsys.readouterr().out
    docs = [oracle.encode_ordinary(t) for t in texts if t]  # null and empty texts are skipped
    assert f"{len(docs):,} documents ({len(texts) - len(docs):,} null/empty skipped" in summary
    want = pack(docs, 64, strategy=strategy, eos_id=oracle.eot_token)
    t = pq.read_table(out)
    assert t.column_names == ["input_ids", "labels", "position_ids", "seq_lens"]
    assert t.schema.field("input_ids").type == pa.list_(pa.int32(), 64)
    assert t["input_ids"].to_pylist() == want.input_ids.tolist()
    assert t["labels"].to_pylist() == want.labels.tolist()
    assert t["position_ids"].to_pylist() == want.position_ids.tolist()


@pytest.mark.parametrize("argv,message", [
    (["--strategy", "bfd"], "--strategy only applies with --pack N"),
    (["--long-documents", "drop"], "--long-documents only applies with --pack N --strategy"),
    (["--pack", "64", "--strategy", "bfd", "-o", "x.bin"], "give -o NAME.parquet"),
    (["--pack", "1", "--strategy", "bfd"], "at least 2"),
])
def test_pack_strategy_misuse_is_named(cli, parquet_in, tmp_path, capsys, argv, message):
    out = tmp_path / "out.parquet"
    args = ["encode", parquet_in, "-o", out] + argv
    if "-o" in argv:
        args = ["encode", parquet_in] + [str(tmp_path / a) if a == "x.bin" else a for a in argv]
    assert cli(*args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
