"""`tltok encode --ray`: on a real `ray start --head` cluster and on a local instance, the shards hold the
single-process `tltok encode` output; a killed run resumes to the same output."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from shard_readers import read_megatron  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
HAVE_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(not HAVE_RAY, reason="ray is not installed (pip install 'ray[data]', the `ray` extra)")

TEXTS = ["first document", None, "", "ünïcödé 日本語 🎉 and numbers 12345", "<|endoftext|> as text",
         None, "  spaces\n\nnewlines\n", "last row"]
TINY = "0.0001"  # --shard-mb below one row group: one shard per row group


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["RAY_AUTH_MODE"] = "disabled"  # a test cluster on 127.0.0.1; no token to hand around
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env.pop("RAY_ADDRESS", None)
    # The package's own default, not the suite's foreground compile: with the kernel cache cold (or
    # evicted), every actor would compile for minutes; the exact Python encoder answers meanwhile.
    # Ids of both paths are tested against tiktoken elsewhere; here the job's mechanics are tested.
    env.pop("TLTOK_COMPILE", None)
    return env


def tltok(*args, check=True, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "tltok_jit.integrations.cli", "encode", *map(str, args)], env=_env(),
                       capture_output=True, text=True, timeout=240, **kw)
    if check:
        assert r.returncode == 0, r.stderr[-3000:]
    return r


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pids_under(path: str) -> list[int]:
    r = subprocess.run(["pgrep", "-f", path], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split() if int(p) != os.getpid()]


@pytest.fixture(scope="module")
def cluster():
    """A 2-CPU head node of our own: its own temp dir and ports; stopped by killing its own processes."""
    if not HAVE_RAY:
        pytest.skip("ray is not installed (pip install 'ray[data]', the `ray` extra)")
    temp = tempfile.mkdtemp(prefix="tltok-ray-")
    port = _free_port()
    cmd = ["ray", "start", "--head", "--num-cpus", "2", "--port", str(port), "--temp-dir", temp,
           "--node-ip-address", "127.0.0.1", "--include-dashboard", "false", "--disable-usage-stats",
           "--dashboard-agent-listen-port", str(_free_port()), "--dashboard-agent-grpc-port", str(_free_port()),
           "--metrics-export-port", str(_free_port()), "--runtime-env-agent-port", str(_free_port())]
    r = subprocess.run([shutil.which("ray") or "ray", *cmd[1:]], env=_env(), capture_output=True, text=True,
                       timeout=120)
    try:
        assert r.returncode == 0, r.stderr[-2000:]
        yield f"127.0.0.1:{port}"
    finally:
        # `ray stop` would stop every Ray process of the machine: end only the ones under our temp dir
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in _pids_under(temp):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.time() + 10
            while _pids_under(temp) and time.time() < deadline:
                time.sleep(0.2)
        shutil.rmtree(temp, ignore_errors=True)


def _write_dataset(d: Path, files: int, copies: int, row_group_size: int) -> Path:
    d.mkdir()
    for i in range(files):  # several files, several row groups, nulls in each
        texts = [None if t is None else f"{t} #{i}.{k}" for k in range(copies) for t in TEXTS]
        pq.write_table(pa.table({"text": pa.array(texts, pa.string()), "row": list(range(len(texts))),
                                 "file": [i] * len(texts)}), d / f"part-{i}.parquet", row_group_size=row_group_size)
    return d


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return _write_dataset(tmp_path_factory.mktemp("ray-cli") / "ds", files=3, copies=10, row_group_size=16)


def _shards(out: Path, ext: str = ".parquet") -> list[Path]:
    return sorted(out.glob(f"part-*{ext}"))


def _concat(paths) -> pa.Table:
    return pa.concat_tables([pq.read_table(p) for p in paths])


def _temps(out: Path) -> list[str]:
    return [p.name for p in out.iterdir() if ".tltok-tmp-" in p.name]


@pytest.fixture(scope="module")
def cluster_run(cluster, dataset, tmp_path_factory):
    out = tmp_path_factory.mktemp("ray-out") / "tokens"
    r = tltok(dataset, "-o", out, "--ray", cluster, "--shard-mb", TINY, "--keep-columns", "file,row")
    return out, r


def test_cluster_run_equals_single_process(cluster_run, dataset, tmp_path):
    out, r = cluster_run
    ref = tmp_path / "ref"
    tltok(dataset, "-o", ref, "--keep-columns", "file,row", "--quiet")
    shards = _shards(out)
    n_groups = sum(pq.ParquetFile(p).metadata.num_row_groups for p in sorted(dataset.glob("*.parquet")))
    assert n_groups == 3 * 5
    assert [p.name for p in shards] == [f"part-{i:05d}-of-{n_groups:05d}.parquet" for i in range(n_groups)]
    got, want = _concat(shards), _concat(sorted(ref.glob("*.parquet")))
    assert got.column_names == ["file", "row", "tokens"]
    assert got.schema.field("tokens").type == pa.list_(pa.uint32())
    assert got.equals(want)
    assert got.column("tokens").null_count == 3 * 10 * 2
    assert f"{n_groups}/{n_groups} shards" in r.stderr and "MB/s" in r.stderr
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["complete"] and [s["name"] for s in manifest["shards"]] == [p.stem for p in shards]
    assert not _temps(out)


def test_rerun_skips_complete_and_redoes_damaged(cluster_run, cluster, dataset, tmp_path):
    src, _ = cluster_run
    out = tmp_path / "copy"
    shutil.copytree(src, out)
    want = _concat(_shards(src))
    shards = _shards(out)
    shards[3].write_bytes(shards[3].read_bytes()[:-20])             # truncated: no footer
    pq.write_table(pq.read_table(shards[5]).slice(0, 3), shards[5])   # readable, but too few rows
    shards[7].unlink()                                               # never written
    (out / f".{shards[2].name}.tltok-tmp-host-123-abcd").write_bytes(b"half")
    r = tltok(dataset, "-o", out, "--ray", cluster, "--shard-mb", TINY, "--keep-columns", "file,row")
    assert "3 shards written, 12 already complete" in r.stdout
    assert "1 temporary files removed" in r.stderr
    assert _concat(_shards(out)).equals(want)
    assert not _temps(out)
    # every shard complete: nothing to do, no cluster needed
    r = tltok(dataset, "-o", out, "--ray", "127.0.0.1:1", "--shard-mb", TINY, "--keep-columns", "file,row")
    assert "0 shards written, 15 already complete" in r.stdout


def test_megatron_shards_on_cluster(cluster, dataset, tmp_path):
    ref = tmp_path / "ref"
    tltok(dataset, "-o", ref, "--format", "megatron", "--eos", "--encoding", "r50k_base", "--quiet")
    out = tmp_path / "meg"
    tltok(dataset, "-o", out, "--ray", cluster, "--format", "megatron", "--eos", "--encoding", "r50k_base",
          "--shard-mb", TINY, "--quiet")
    names = (out / "shards.txt").read_text().split()
    assert len(names) == 15 and names == sorted(names)
    docs = []
    for name in names:
        dtype, d = read_megatron(out / name)
        assert dtype == "<u2"
        docs += [list(x) for x in d]
    _, want = read_megatron(ref)
    assert docs == [list(x) for x in want] and len(docs) == 3 * 10 * 6  # the null rows skipped
    assert all(d[-1] == 50256 for d in docs)
    assert not _temps(out)


@pytest.mark.parametrize("flags", [["--pad-to", "6", "--pad-id", "3", "--padding-side", "left"],
                                   ["--max-length", "4", "--truncation-side", "left"]])
def test_lengths_on_cluster_equal_single_process(cluster, dataset, tmp_path, flags):
    ref = tmp_path / "ref"
    tltok(dataset, "-o", ref, "--keep-columns", "file,row", "--quiet", *flags)
    out = tmp_path / "cut"
    tltok(dataset, "-o", out, "--ray", cluster, "--shard-mb", TINY, "--keep-columns", "file,row", "--quiet", *flags)
    got = _concat(_shards(out))
    want = _concat(sorted(ref.glob("*.parquet")))
    assert got.equals(want)
    if "--pad-to" in flags:
        assert got.column_names == ["file", "row", "tokens", "attention_mask"]
        assert got.schema.field("tokens").type == pa.list_(pa.int32(), 6)
    else:
        assert max(len(x) for x in got.column("tokens").to_pylist() if x is not None) == 4
    assert not _temps(out)


def test_wordpiece_file_on_cluster_equals_single_process(cluster, dataset, tmp_path):
    from conftest import get_shared_path

    minilm = get_shared_path("tokenizers/minilm/tokenizer.json")
    ref = tmp_path / "ref"
    tltok(dataset, "-o", ref, "--tokenizer", minilm, "--keep-columns", "row", "--quiet")
    out = tmp_path / "wp"
    tltok(dataset, "-o", out, "--ray", cluster, "--tokenizer", minilm, "--shard-mb", TINY, "--keep-columns", "row",
          "--quiet")
    got = _concat(_shards(out))
    assert got.equals(_concat(sorted(ref.glob("*.parquet"))))
    assert got.column("tokens").to_pylist()[0][:1] == [2034]  # "first document" -> [first, document, ...]


def test_row_error_is_one_line(cluster, dataset, tmp_path):
    out = tmp_path / "err"
    r = tltok(dataset, "-o", out, "--ray", cluster, "--special", "error", "--quiet", check=False)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    # which file fails first depends on timing; each has "<|endoftext|> as text" at row 4 (of 80)
    assert len(lines) == 1 and re.search(r"part-\d\.parquet: row 4: .*'<\|endoftext\|>'", lines[0]), r.stderr
    assert "--special text" in lines[0]
    assert not _shards(out) and not json.loads((out / "_manifest.json").read_text())["complete"]


def test_kill_and_resume(cluster, tmp_path):
    data = _write_dataset(tmp_path / "ds", files=2, copies=30, row_group_size=4)  # 120 shards
    base = [data, "--ray", cluster, "--shard-mb", TINY, "--ray-workers", "2", "--all-columns"]
    whole = tmp_path / "whole"
    tltok(data, "-o", whole, *base[1:], "--quiet")
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "tltok_jit.integrations.cli", "encode", data, "-o", out, *base[1:],
                             "--quiet"], env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None and \
                (not out.is_dir() or len(_shards(out)) < 10):
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.kill()  # SIGKILL: no cleanup of any kind
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(1.0)  # the job's actors die with their driver
    done_at_kill = len(_shards(out))
    assert 10 <= done_at_kill < 120
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["complete"] is False
    r = tltok(data, "-o", out, *base[1:])
    m = re.search(r"(\d+) shards written, (\d+) already complete", r.stdout)
    # a shard an actor finished just after the kill counts as complete too
    assert m and int(m[1]) + int(m[2]) == 120 and done_at_kill <= int(m[2]) < 120, r.stdout
    assert [p.name for p in _shards(out)] == [p.name for p in _shards(whole)]
    for a, b in zip(_shards(out), _shards(whole)):
        assert pq.read_table(a).equals(pq.read_table(b)), a.name
    assert not _temps(out)
    assert json.loads((out / "_manifest.json").read_text())["complete"] is True


@needs_ray
def test_local_instance_without_address(dataset, tmp_path):
    ref = tmp_path / "ref"
    tltok(dataset, "-o", ref, "--count-only", "--output-column", "n", "--special", "allow", "--quiet")
    out = tmp_path / "local"
    r = tltok(dataset, "-o", out, "--ray", "--ray-workers", "1", "--count-only", "--output-column", "n",
              "--special", "allow")
    assert "1/1 shards" in r.stderr or "3/3 shards" in r.stderr
    assert [p.name for p in _shards(out)] == [f"part-{i:05d}-of-00003.parquet" for i in range(3)]
    got = _concat(_shards(out))
    assert got.column_names == ["n"] and got.schema.field("n").type == pa.int64()
    assert got.equals(_concat(sorted(ref.glob("*.parquet"))))


@pytest.mark.parametrize("extra, message", [
    (["--pack", "16"], "--pack is not supported with --ray"),
    (["--eos"], "--eos only applies to --format megatron|bin"),
    (["--format", "bin", "--count-only"], "--format bin and --count-only exclude each other"),
    (["--format", "megatron", "--keep-columns", "row"], "--keep-columns only applies to --format parquet"),
    (["--ray-workers", "0"], "--ray-workers must be >= 1"),
    (["--shard-mb", "0"], "--shard-mb must be > 0"),
    (["--column", "body"], "column 'body' not found in"),
    (["--pad-to", "8", "--format", "megatron"], "--pad-to and --format megatron exclude each other"),
    (["--pad-to", "8", "--pad-id", "300000"], "--pad-id 300000 is not a token id"),
    (["--padding-side", "left"], "--padding-side only applies with --pad-to"),
])
def test_refused_combinations(dataset, tmp_path, extra, message):
    if not HAVE_RAY and "--ray-workers" not in extra and "--shard-mb" not in extra and "--pack" not in extra:
        pytest.skip("ray is not installed (pip install 'ray[data]', the `ray` extra)")
    r = tltok(dataset, "-o", tmp_path / "o", "--ray", *extra, check=False)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "o").exists()


def test_ray_only_flags_need_ray(dataset, tmp_path):
    r = tltok(dataset, "-o", tmp_path / "o", "--ray-workers", "2", check=False)
    assert r.returncode == 2 and "--ray-workers needs --ray" in r.stderr


def test_other_options_on_existing_output_refused(cluster_run, dataset):
    out, _ = cluster_run
    r = tltok(dataset, "-o", out, "--ray", "--shard-mb", TINY, "--keep-columns", "file,row", "--count-only",
              "--output-column", "tokens", check=False)
    assert r.returncode == 2 and "holds a run with other option count_only" in r.stderr
    assert "--overwrite" in r.stderr


def test_jsonl_input_refused(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"text": "a"}\n')
    r = tltok(p, "-o", tmp_path / "o", "--ray", check=False)
    assert r.returncode == 2 and "--ray reads Parquet only" in r.stderr


def test_without_ray_one_line_error(dataset, tmp_path, monkeypatch, capsys):
    from tltok_jit.integrations import cli

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    assert cli.main(["encode", str(dataset), "-o", str(tmp_path / "o"), "--ray"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "tltok: error: --ray needs Ray: pip install 'ray[data]'"
