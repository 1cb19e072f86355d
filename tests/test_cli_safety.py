"""`tltok` never writes over its input, cleans up after killed runs, and reports every error as one
line naming the problem and the option to change (status 2, no traceback)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from conftest import REPO  # noqa: E402


@pytest.fixture
def cli(cli_main):
    """cli_main, expecting a refusal (exit status 2) unless told otherwise."""
    return lambda *argv, rc=2: cli_main(*argv, rc=rc)


@pytest.fixture
def files(tmp_path, shared_path):
    shared_path("tokenizers/tiktoken/o200k_base.tiktoken")
    lines = tmp_path / "lines.parquet"
    pq.write_table(pa.table({"text": ["hello", "world"]}), lines)
    jsonl = tmp_path / "lines.jsonl"
    jsonl.write_text('{"text": "hello"}\n{"text": "a <|endoftext|>"}\n')
    d = tmp_path / "data"
    (d / "sub").mkdir(parents=True)
    pq.write_table(pa.table({"text": ["x"]}), d / "sub" / "a.parquet")
    return tmp_path, lines, jsonl, d


def test_output_that_is_or_holds_the_input_is_refused(cli, files):
    tmp, lines, jsonl, d = files
    before = lines.read_bytes()
    e = cli("encode", lines, "-o", lines, "--overwrite")
    assert f"output {lines} is the input {lines}" in e and "-o/--output" in e
    assert lines.read_bytes() == before
    e = cli("encode", lines, "-o", tmp / "." / "lines.parquet", "--overwrite")  # the same file, spelled otherwise
    assert "is the input" in e
    e = cli("encode", d, "-o", d / "sub", "--overwrite")
    assert "lies inside the input" in e
    e = cli("encode", d / "sub", "-o", d, "--overwrite")
    assert "contains the input" in e
    assert (d / "sub" / "a.parquet").exists()
    shard_index = tmp / "shard.json"  # JSON Lines input, and the name of the index of -o shard.bin
    shard_index.write_text('{"text": "hello"}\n')
    e = cli("encode", shard_index, "-o", tmp / "shard.bin", "--pack", 1, "--overwrite")
    assert "is the input" in e and shard_index.read_text() == '{"text": "hello"}\n'
    assert not (tmp / "shard.bin").exists()


def test_unwritable_outputs(cli, files):
    tmp, lines, jsonl, d = files
    e = cli("encode", jsonl, "-o", lines / "out.parquet")  # the parent is a file
    assert f"{lines} is a file, not a directory" in e and "-o/--output" in e
    e = cli("encode", jsonl, "-o", "/proc/nope/x.parquet")
    assert "cannot create the output directory /proc/nope" in e and "-o/--output" in e


def test_stale_temp_files_are_removed(cli, files):
    tmp, lines, jsonl, d = files
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a PID that was alive and is gone
    stale = tmp / f".out.parquet.tltok-tmp-{dead.pid}"
    stale.write_bytes(b"left by a killed run")
    stale_dir = tmp / f".outdir.tltok-tmp-{dead.pid}"
    (stale_dir / "x").mkdir(parents=True)
    alive = tmp / f".out.parquet.tltok-tmp-{os.getppid()}"  # a live process: maybe a run in progress
    alive.write_bytes(b"keep")
    other = tmp / f".other.parquet.tltok-tmp-{dead.pid}"  # another destination: not ours to judge
    other.write_bytes(b"keep")
    cli("encode", jsonl, "-o", tmp / "out.parquet", "--quiet", rc=0)
    assert not stale.exists() and alive.exists() and other.exists()
    cli("encode", d, "-o", tmp / "outdir", "--quiet", rc=0)
    assert not stale_dir.exists()


def test_tokenizer_errors_name_the_flag(cli, files):
    tmp, lines, jsonl, d = files
    arr = tmp / "tokenizer.json"
    arr.write_text("[1, 2]")
    e = cli("encode", jsonl, "-o", tmp / "o.parquet", "--tokenizer", arr)
    assert "top level must be a JSON object" in e and "--tokenizer" in e and ".tiktoken" not in e
    e = cli("encode", jsonl, "-o", tmp / "o.parquet", "--encoding", "nope")
    assert "unknown encoding 'nope' (--encoding)" in e


def test_special_mode_table():
    from tltok_jit.integrations.cli import CliError, _special_kwargs

    assert _special_kwargs("error") == {"allowed_special": set(), "disallowed_special": "all"}
    assert _special_kwargs("allow")["allowed_special"] == "all"
    with pytest.raises(CliError, match="unknown --special mode 'nope'"):
        _special_kwargs("nope")


def _stream(args, **kw):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen([sys.executable, "-m", "tltok_jit.integrations.cli", "stream", *args], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def _one_line_error(proc, data: bytes = b"") -> str:
    out, err = proc.communicate(data, timeout=600)
    err = err.decode()
    assert proc.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_stream_errors(shared_path):
    shared_path("tokenizers/tiktoken/o200k_base.tiktoken")
    e = _one_line_error(_stream(["--encoding", "nope"]), b"hi")
    assert "unknown encoding 'nope' (--encoding)" in e
    e = _one_line_error(_stream(["--special", "error"]), b"a <|endoftext|> b")
    assert "'<|endoftext|>'" in e and "--special error" in e and "disallowed_special" not in e
    e = _one_line_error(_stream(["--disallowed-special", "all"]), b"a <|endoftext|> b")
    assert "--disallowed-special" in e
    e = _one_line_error(_stream(["--errors", "strict"]), b"ok \xff")
    assert "not valid UTF-8" in e and "--errors" in e


def test_stream_ctrl_c_after_ids(shared_path):
    shared_path("tokenizers/tiktoken/o200k_base.tiktoken")
    proc = _stream(["--encoding", "o200k_base"])
    proc.stdin.write(b"hello world, this is streamed text " * 20)
    proc.stdin.flush()
    first = proc.stdout.readline()  # ids have been written
    assert first.strip().isdigit()
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    err = err.decode()
    assert proc.returncode == 130
    assert "no output written" not in err and "interrupted after writing" in err and "Traceback" not in err
