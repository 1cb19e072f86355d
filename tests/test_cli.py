"""The `tltok` command line: encode Parquet / IPC / JSONL to Parquet, pack mode, errors, atomic output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("tiktoken")

from conftest import FIXTURES, REPO, SHARED, get_shared_path, missing_reason  # noqa: E402

SAMPLE = FIXTURES / "sample.parquet"


def _corpus(name: str) -> str:
    p = SHARED / "corpora" / name
    if not p.exists():
        pytest.skip(missing_reason(p))
    return p.read_text(encoding="utf-8")


def _docs(text: str, size: int = 1500) -> list[str]:
    out, cur = [], []
    n = 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        n += len(line)
        if n >= size:
            out.append("".join(cur))
            cur, n = [], 0
    if cur:
        out.append("".join(cur))
    return out


@pytest.fixture(scope="module")
def docs():
    """~1,500-character documents of the shared English and Chinese corpora; without the shared folder,
    of the committed UDHR sample (106 languages), so the commands are still checked on real text."""
    try:
        d = _docs(_corpus("english-war-and-peace.txt")[:300_000]) + _docs(_corpus("chinese-sanguo-yanyi.txt")[:150_000])
    except pytest.skip.Exception:
        d = _docs("".join(pq.read_table(SAMPLE)["text"].to_pylist()))
    d[3] = None
    d[10] = ""
    return d


@pytest.fixture(scope="module")
def parquet_in(tmp_path_factory, docs):
    p = tmp_path_factory.mktemp("in") / "corpus.parquet"
    t = pa.table({"id": list(range(len(docs))), "text": docs, "lang": ["x"] * len(docs)})
    pq.write_table(t, p, row_group_size=100)
    return p


@pytest.fixture(scope="module")
def oracle(tiktoken_oracle):
    return tiktoken_oracle("o200k_base")


@pytest.fixture
def cli(monkeypatch):
    from tltok_jit.integrations import cli as C

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")

    def run(*argv):
        return C.main([str(a) for a in argv])

    return run


def _expected(oracle, docs):
    return [None if d is None else oracle.encode_ordinary(d) for d in docs]


# ------------------------------------------------------------------------------------------------
# happy paths
# ------------------------------------------------------------------------------------------------

def test_encode_parquet(cli, parquet_in, tmp_path, docs, oracle, capsys):
    out = tmp_path / "out.parquet"
    assert cli("encode", parquet_in, "-o", out, "--keep-columns", "id", "--threads", "2") == 0
    t = pq.read_table(out)
    assert t.column_names == ["id", "tokens"]
    assert t.schema.field("tokens").type == pa.list_(pa.uint32())
    assert t["id"].to_pylist() == list(range(len(docs)))
    assert t["tokens"].to_pylist() == _expected(oracle, docs)
    summary = capsys.readouterr().out
    assert f"{len(docs):,} rows" in summary and "tokens" in summary and "MB/s" in summary
    assert not [p for p in tmp_path.iterdir() if "tltok-tmp" in p.name]
    # the ids are written without a dictionary (it costs CPU and saves nothing); kept columns keep theirs
    md = pq.ParquetFile(out).metadata.row_group(0)
    encodings = {md.column(i).path_in_schema: md.column(i).encodings for i in range(md.num_columns)}
    assert "RLE_DICTIONARY" not in encodings["tokens.list.element"]
    assert "RLE_DICTIONARY" in encodings["id"]


def test_readme_first_command(cli, tmp_path, monkeypatch, oracle, capsys):
    """`tltok encode fixtures/sample.parquet -o tokens.parquet`: default column `text` and encoding
    o200k_base, and the summary says how many tokens went where."""
    monkeypatch.chdir(tmp_path)
    assert cli("encode", SAMPLE, "-o", "tokens.parquet") == 0
    t = pq.read_table(tmp_path / "tokens.parquet")
    texts = pq.read_table(SAMPLE)["text"].to_pylist()
    assert t.column_names == ["tokens"] and t.num_rows == len(texts) == 106
    want = [oracle.encode_ordinary(x) for x in texts]
    assert t["tokens"].to_pylist() == want
    summary = capsys.readouterr().out
    assert "106 rows" in summary and f"{sum(map(len, want)):,} tokens" in summary
    assert summary.rstrip().endswith("-> tokens.parquet")


def test_count_only_all_columns(cli, parquet_in, tmp_path, docs, oracle):
    out = tmp_path / "counts.parquet"
    assert cli("encode", parquet_in, "-o", out, "--count-only", "--all-columns", "--quiet") == 0
    t = pq.read_table(out)
    assert t.column_names == ["id", "text", "lang", "n_tokens"]
    assert t["n_tokens"].to_pylist() == [None if e is None else len(e) for e in _expected(oracle, docs)]


def test_output_column_and_small_batches(cli, parquet_in, tmp_path, docs, oracle):
    out = tmp_path / "o.parquet"
    assert cli("encode", parquet_in, "-o", out, "--output-column", "ids", "--batch-mb", "0.05", "--quiet") == 0
    t = pq.read_table(out)
    assert t.column_names == ["ids"]
    assert t["ids"].to_pylist() == _expected(oracle, docs)


def test_directory_in_directory_out(cli, tmp_path, docs, oracle):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    pq.write_table(pa.table({"text": docs[:40]}), src / "a.parquet")
    pq.write_table(pa.table({"text": docs[40:90]}), src / "sub" / "b.parquet")
    (src / "notes.txt").write_text("not parquet")
    out = tmp_path / "dst"
    assert cli("encode", src, "-o", out, "--quiet") == 0
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet")) == ["a.parquet", "sub/b.parquet"]
    assert pq.read_table(out / "a.parquet")["tokens"].to_pylist() == _expected(oracle, docs[:40])
    assert pq.read_table(out / "sub" / "b.parquet")["tokens"].to_pylist() == _expected(oracle, docs[40:90])
    assert cli("encode", src, "-o", out, "--quiet") == 2  # exists
    assert cli("encode", src, "-o", out, "--quiet", "--overwrite", "--count-only") == 0
    assert pq.read_table(out / "a.parquet").column_names == ["n_tokens"]


def test_ipc_and_jsonl_inputs(cli, tmp_path, docs, oracle):
    t = pa.table({"text": docs[:60], "k": list(range(60))})
    feather = tmp_path / "in.feather"
    import pyarrow.feather as feather_mod

    feather_mod.write_feather(t, feather)
    stream = tmp_path / "in.arrows"
    with pa.OSFile(str(stream), "wb") as f, pa.ipc.new_stream(f, t.schema) as w:
        for b in t.to_batches(max_chunksize=7):
            w.write_batch(b)
    jsonl = tmp_path / "in.jsonl"
    with open(jsonl, "w", encoding="utf-8") as f:
        for i, d in enumerate(docs[:60]):
            f.write(json.dumps({"k": i, "text": d}) + "\n")
    exp = _expected(oracle, docs[:60])
    for src in (feather, stream, jsonl):
        out = tmp_path / (src.stem + src.suffix.replace(".", "_") + ".parquet")
        assert cli("encode", src, "-o", out, "--keep-columns", "k", "--quiet") == 0, src
        got = pq.read_table(out)
        assert got["k"].to_pylist() == list(range(60))
        assert got["tokens"].to_pylist() == exp, src


def test_special_modes(cli, tmp_path, oracle, capsys):
    src = tmp_path / "sp.parquet"
    texts = ["plain", "x <|endoftext|> y"]
    pq.write_table(pa.table({"text": texts}), src)
    out = tmp_path / "sp_out.parquet"
    assert cli("encode", src, "-o", out, "--quiet") == 0
    assert pq.read_table(out)["tokens"].to_pylist() == [oracle.encode_ordinary(t) for t in texts]
    assert cli("encode", src, "-o", out, "--quiet", "--overwrite", "--special", "allow") == 0
    assert pq.read_table(out)["tokens"].to_pylist() == [oracle.encode(t, allowed_special="all") for t in texts]
    capsys.readouterr()
    assert cli("encode", src, "-o", tmp_path / "e.parquet", "--special", "error") == 2
    err = capsys.readouterr().err
    assert "row 1" in err and "<|endoftext|>" in err and str(src) in err
    assert not (tmp_path / "e.parquet").exists()


def test_tokenizer_file(cli, parquet_in, tmp_path, docs, tiktoken_oracle, shared_path):
    rank = shared_path("tokenizers/tiktoken/cl100k_base.tiktoken")
    out = tmp_path / "cl.parquet"
    assert cli("encode", parquet_in, "-o", out, "--tokenizer", rank, "--quiet") == 0
    ref = tiktoken_oracle("cl100k_base")
    assert pq.read_table(out)["tokens"].to_pylist() == _expected(ref, docs)


def test_tokenizer_json(cli, parquet_in, tmp_path, docs, shared_path):
    tokenizers = pytest.importorskip("tokenizers")
    path = shared_path("tokenizers/gpt2/tokenizer.json")
    import tltok_jit

    if not hasattr(tltok_jit, "from_file"):
        pytest.skip("tltok_jit.from_file (tokenizer.json loader) not in this build")
    out = tmp_path / "gpt2.parquet"
    assert cli("encode", parquet_in, "-o", out, "--tokenizer", path, "--quiet", "--count-only") == 0
    hf = tokenizers.Tokenizer.from_file(str(path))
    exp = [None if d is None else len(hf.encode(d, add_special_tokens=False).ids) for d in docs]
    assert pq.read_table(out)["n_tokens"].to_pylist() == exp


# ------------------------------------------------------------------------------------------------
# pack mode
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,dtype", [("r50k_base", "uint16"), ("o200k_base", "uint32")])
def test_pack(cli, parquet_in, tmp_path, docs, tiktoken_oracle, name, dtype):
    ref = tiktoken_oracle(name)
    out = tmp_path / f"train_{name}.bin"
    assert cli("encode", parquet_in, "-o", out, "--pack", 256, "--eos", "--encoding", name, "--quiet",
               "--batch-mb", "0.1") == 0
    idx = json.loads(out.with_suffix(".json").read_text())
    stream = []
    for d in docs:
        if d is not None:
            stream += ref.encode_ordinary(d) + [ref.eot_token]
    n_seqs = len(stream) // 256
    assert idx["dtype"] == dtype and idx["seq_len"] == 256 and idx["n_seqs"] == n_seqs
    assert idx["encoding"] == name and idx["eos"] is True and idx["eos_id"] == ref.eot_token
    assert idx["documents"] == sum(d is not None for d in docs)
    assert idx["dropped_tail_tokens"] == len(stream) - n_seqs * 256
    assert idx["source"] == [str(parquet_in)]
    seqs = np.memmap(out, dtype=idx["dtype"], mode="r").reshape(idx["n_seqs"], idx["seq_len"])
    assert np.array_equal(np.asarray(seqs).ravel(), np.array(stream[: n_seqs * 256], dtype=dtype))
    # without --eos: plain concatenation
    out2 = tmp_path / f"plain_{name}.bin"
    assert cli("encode", parquet_in, "-o", out2, "--pack", 1000, "--encoding", name, "--quiet") == 0
    idx2 = json.loads(out2.with_suffix(".json").read_text())
    plain = [t for d in docs if d is not None for t in ref.encode_ordinary(d)]
    got = np.fromfile(out2, dtype=idx2["dtype"])
    assert idx2["eos"] is False and np.array_equal(got, np.array(plain[: len(got)], dtype=dtype))
    assert len(got) == (len(plain) // 1000) * 1000


def test_pack_errors(cli, parquet_in, tmp_path, capsys):
    assert cli("encode", parquet_in, "-o", tmp_path / "x.parquet", "--pack", 16) == 2
    assert ".bin" in capsys.readouterr().err
    assert cli("encode", parquet_in, "-o", tmp_path / "x.bin", "--pack", 16, "--count-only") == 2
    assert cli("encode", parquet_in, "-o", tmp_path / "x.parquet", "--eos") == 2


# ------------------------------------------------------------------------------------------------
# errors
# ------------------------------------------------------------------------------------------------

def test_errors(cli, parquet_in, tmp_path, capsys):
    def err_of(*argv):
        capsys.readouterr()
        assert cli(*argv) == 2
        return capsys.readouterr().err

    e = err_of("encode", parquet_in, "-o", tmp_path / "a.parquet", "--column", "body")
    assert "'body' not found" in e and "columns: id, text, lang" in e
    e = err_of("encode", parquet_in, "-o", tmp_path / "a.parquet", "--column", "id")
    assert "'id'" in e and "int64" in e and "not a string column" in e
    e = err_of("encode", parquet_in, "-o", tmp_path / "a.parquet", "--keep-columns", "nope")
    assert "'nope' not found" in e
    e = err_of("encode", parquet_in, "-o", tmp_path / "a.parquet", "--encoding", "o300k")
    assert "unknown encoding 'o300k'" in e and "o200k_base" in e and "cl100k_base" in e
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"PAR1 this is not parquet at all")
    e = err_of("encode", bad, "-o", tmp_path / "a.parquet")
    assert str(bad) in e and "cannot read" in e
    e = err_of("encode", tmp_path / "missing.parquet", "-o", tmp_path / "a.parquet")
    assert "not found" in e and "missing.parquet" in e
    e = err_of("encode", tmp_path / "data.csv", "-o", tmp_path / "a.parquet")
    assert not (tmp_path / "a.parquet").exists()
    existing = tmp_path / "exists.parquet"
    existing.write_bytes(b"keep me")
    e = err_of("encode", parquet_in, "-o", existing)
    assert "--overwrite" in e and existing.read_bytes() == b"keep me"
    e = err_of("encode", parquet_in, "-o", tmp_path / "a.parquet", "--tokenizer", tmp_path / "nope.tiktoken")
    assert "not found" in e
    assert not [p for p in tmp_path.iterdir() if "tltok-tmp" in p.name]


def test_other_commands(cli, capsys, shared_path):
    shared_path("tokenizers/tiktoken/r50k_base.tiktoken")  # warmup loads it: skip, naming it, if absent
    if (REPO / "bench" / "run.py").exists():
        assert cli("bench", "--help") == 0
    assert cli("warmup", "--encoding", "r50k_base") == 0
    out = capsys.readouterr().out
    assert "warmup" in out and " s" in out


def test_warmup_of_a_tokenizer_file(cli, capsys, tmp_path):
    """`tltok warmup --tokenizer FILE` compiles what that model uses (here a tokenizer.json that also
    needs the tokenizer.json stage: SmolLM2 lacks bytes); a missing file is named, no traceback."""
    from tltok_jit.compile import background as warm

    capsys.readouterr()
    assert cli("warmup", "--tokenizer", get_shared_path("tokenizers/smollm2/tokenizer.json")) == 0
    out = capsys.readouterr().out
    assert out.startswith("tltok warmup: ") and "kernels compiled/loaded in" in out
    assert "tokenizer.json" in out or "smollm2" in out.lower()
    assert warm.all_ready(warm.STAGES)  # every stage, "hf" included (foreground: no marker is needed)
    assert cli("warmup", "--tokenizer", tmp_path / "missing.json") == 2
    err = capsys.readouterr().err
    assert "tokenizer file not found" in err and "missing.json" in err and "Traceback" not in err


def test_progress_line(capsys):
    from tltok_jit.integrations.cli import Progress

    p = Progress(True, 100)
    p.update(50, 2_000_000, 500_000)
    p._draw(time.perf_counter())
    p.finish()
    err = capsys.readouterr().err
    assert "\r" in err and "50.0%" in err and "MB/s" in err and "tok/s" in err and "50 rows" in err
    q = Progress(False, None)
    q.update(1, 1, 1)
    q.finish()
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------------------------------------
# atomic output under kill
# ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def big_parquet(tmp_path_factory):
    text = _corpus("english-war-and-peace.txt")
    docs = _docs(text) * 18  # ~57 MB: seconds of work left when the first batch is written, even pipelined
    p = tmp_path_factory.mktemp("big") / "big.parquet"
    pq.write_table(pa.table({"text": docs}), p, row_group_size=2000)
    return p


def _spawn(args):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["TIKTOKEN_CACHE_DIR"] = ""
    return subprocess.Popen([sys.executable, "-m", "tltok_jit.integrations.cli", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_midway_leaves_no_output(big_parquet, tmp_path, sig):
    out = tmp_path / "out.parquet"
    proc = _spawn(["encode", big_parquet, "-o", out, "--threads", "1", "--batch-mb", "0.5"])
    tmp = None
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        tmps = [p for p in tmp_path.iterdir() if "tltok-tmp" in p.name]
        if tmps and tmps[0].stat().st_size > 0:
            tmp = tmps[0]
            break
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.fail(f"finished before it could be killed: {proc.communicate()}")
    assert tmp is not None, "no temporary output appeared"
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert proc.returncode != 0
    assert not out.exists()
    if sig == signal.SIGTERM:
        assert not tmp.exists(), "SIGTERM should remove the temporary file"
