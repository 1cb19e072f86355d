"""The read -> encode -> write pipeline of `tltok encode` (tltok_jit.integrations.encode_job): failures in any stage
mid-input give one CLI line (rc 2) and leave no output; Ctrl-C stops every thread; the output is the
same for any thread count and batch size; memory is bounded by a few batches."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("tiktoken")

from conftest import FIXTURES, REPO  # noqa: E402

from tltok_jit.integrations import encode_job  # noqa: E402
from tltok_jit.integrations.cli import main  # noqa: E402

SAMPLE = FIXTURES / "sample.parquet"


@pytest.fixture(scope="module")
def texts():
    """The committed UDHR openings (106 languages), cut into ~300-byte documents, with a null and an empty row."""
    joined = "".join(pq.read_table(SAMPLE)["text"].to_pylist())
    out = [joined[i:i + 300] for i in range(0, len(joined), 300)]
    out[4] = None
    out[7] = ""
    return out


@pytest.fixture(scope="module")
def oracle(tiktoken_oracle):
    return tiktoken_oracle("o200k_base")


def _expected(oracle, texts):
    return [None if t is None else oracle.encode_ordinary(t) for t in texts]


def _cli(capsys, *argv):
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr().err


def _one_line_rc2(rc, err):
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, (rc, err)
    return err


def _leftovers(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if "tltok-tmp" in p.name or "tltok-old" in p.name)


def _corrupt_row_group(path, group: int) -> None:
    """Scramble the compressed pages of one row group; the footer stays valid, so the file opens and
    fails only when that group is read."""
    cc = pq.ParquetFile(str(path)).metadata.row_group(group).column(0)
    start = cc.dictionary_page_offset or cc.data_page_offset
    data = bytearray(path.read_bytes())
    for k in range(start + 40, start + cc.total_compressed_size - 10):
        data[k] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.fixture
def two_files(tmp_path, texts):
    src = tmp_path / "src"
    src.mkdir()
    half = len(texts) // 2
    pq.write_table(pa.table({"text": texts[:half]}), src / "a.parquet", row_group_size=20, compression="zstd")
    pq.write_table(pa.table({"text": texts[half:]}), src / "b.parquet", row_group_size=20, compression="zstd")
    return src, half


# ------------------------------------------------------------------------------------------------
# failures in the middle of the input
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["parquet", "pack", "megatron"])
def test_corrupt_second_file_midway(capsys, tmp_path, two_files, mode):
    src, _half = two_files
    _corrupt_row_group(src / "b.parquet", 2)  # rows 40.. of the second file; its first groups read fine
    out = {"parquet": tmp_path / "out", "pack": tmp_path / "train.bin", "megatron": tmp_path / "ds"}[mode]
    extra = {"parquet": [], "pack": ["--pack", 64, "--eos"], "megatron": ["--format", "megatron"]}[mode]
    rc, err = _cli(capsys, "encode", src, "-o", out, "--quiet", "--batch-mb", "0.002", *extra)
    err = _one_line_rc2(rc, err)
    assert f"cannot read {src / 'b.parquet'}" in err and "ZSTD" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"], "partial output left behind"


def test_non_string_column_in_later_file(capsys, tmp_path, two_files):
    src, _half = two_files
    pq.write_table(pa.table({"text": [1, 2, 3]}), src / "c.parquet")
    rc, err = _cli(capsys, "encode", src, "-o", tmp_path / "out", "--quiet")
    err = _one_line_rc2(rc, err)
    assert f"column 'text' of {src / 'c.parquet'} has type int64, not a string column" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_unreadable_second_file(capsys, tmp_path, two_files):
    src, _half = two_files
    (src / "b.parquet").write_bytes(b"PAR1 not parquet at all")
    rc, err = _cli(capsys, "encode", src, "-o", tmp_path / "out", "--quiet")
    err = _one_line_rc2(rc, err)
    assert f"cannot read {src / 'b.parquet'}" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


@pytest.mark.parametrize("extra", [[], ["--format", "bin"]])
def test_special_token_late_in_second_file_names_its_row(capsys, tmp_path, texts, extra):
    src = tmp_path / "src"
    src.mkdir()
    second = list(texts[:60])
    second[45] = "ordinary text <|endoftext|> more"
    pq.write_table(pa.table({"text": texts[:30]}), src / "a.parquet")
    pq.write_table(pa.table({"text": second}), src / "b.parquet", row_group_size=10)
    rc, err = _cli(capsys, "encode", src, "-o", tmp_path / "out", "--quiet", "--special", "error",
                   "--batch-mb", "0.001", *extra)
    err = _one_line_rc2(rc, err)
    assert str(src / "b.parquet") in err and "row 45 of the file" in err and "<|endoftext|>" in err
    assert "--special text" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_writer_failure_names_the_file_and_leaves_nothing(capsys, tmp_path, two_files, monkeypatch):
    src, half = two_files
    real = encode_job.ParquetSink.__call__

    def failing(self, item):
        if isinstance(item, encode_job.Part) and item.file == 1 and item.row >= 20:
            raise OSError(28, "No space left on device")
        return real(self, item)

    monkeypatch.setattr(encode_job.ParquetSink, "__call__", failing)
    rc, err = _cli(capsys, "encode", src, "-o", tmp_path / "out", "--quiet", "--batch-mb", "0.002")
    err = _one_line_rc2(rc, err)
    assert f"writing the output of {src / 'b.parquet'} (rows from" in err and "No space left on device" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_ctrl_c_stops_and_cleans_up(tmp_path, texts):
    big = tmp_path / "big.parquet"
    pq.write_table(pa.table({"text": [t for t in texts if t] * 400}), big, row_group_size=500)
    out = tmp_path / "out.parquet"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "tltok_jit.integrations.cli", "encode", str(big), "-o", str(out),
                             "--threads", "1", "--batch-mb", "0.05"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    tmp = None
    while time.time() < deadline and proc.poll() is None and tmp is None:
        found = [p for p in tmp_path.iterdir() if "tltok-tmp" in p.name]
        if found and found[0].stat().st_size > 0:
            tmp = found[0]
        time.sleep(0.02)
    if proc.poll() is not None:
        pytest.fail(f"finished before it could be interrupted: {proc.communicate()}")
    assert tmp is not None, "no temporary output appeared"
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert b"interrupted" in err and b"Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.parquet"]


# ------------------------------------------------------------------------------------------------
# output independent of threads and batch size
# ------------------------------------------------------------------------------------------------

def test_same_output_for_threads_and_batches(capsys, tmp_path, two_files, texts, oracle):
    src, half = two_files
    runs = {}
    for name, extra in [("t1", ["--threads", "1"]), ("t2", ["--threads", "2"]),
                        ("t1_tiny", ["--threads", "1", "--batch-mb", "0.001"]),
                        ("t2_tiny", ["--threads", "2", "--batch-mb", "0.001"])]:
        out = tmp_path / name
        rc, err = _cli(capsys, "encode", src, "-o", out, "--quiet", *extra)
        assert rc == 0, err
        runs[name] = {f: (out / f).read_bytes() for f in ("a.parquet", "b.parquet")}
    assert runs["t1"] == runs["t2"] and runs["t1_tiny"] == runs["t2_tiny"]  # files byte for byte
    want = _expected(oracle, texts)
    for name in runs:
        got = pq.read_table(tmp_path / name / "a.parquet")["tokens"].to_pylist() + \
            pq.read_table(tmp_path / name / "b.parquet")["tokens"].to_pylist()
        assert got == want, name
    tiny = pq.ParquetFile(str(tmp_path / "t1_tiny" / "b.parquet")).metadata.num_row_groups
    assert tiny > 20, "--batch-mb 0.001 should give many batches"


@pytest.mark.parametrize("extra", [["--pack", "50", "--eos"], ["--format", "megatron", "--eos"]])
def test_shards_same_for_threads_and_batches(capsys, tmp_path, two_files, extra):
    src, _half = two_files
    outs = []
    for i, more in enumerate([["--threads", "1"], ["--threads", "2", "--batch-mb", "0.001"]]):
        out = tmp_path / f"r{i}" / "train.bin"
        rc, err = _cli(capsys, "encode", src, "-o", out, "--quiet", *extra, *more)
        assert rc == 0, err
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and len(outs[0]) > 0


# ------------------------------------------------------------------------------------------------
# the pipeline itself
# ------------------------------------------------------------------------------------------------

class _Batch:
    def __init__(self, k: int, rows: int = 3):
        self.k = k
        self.num_rows = rows


def _inputs(n_files: int, per_file: int, fail_at=None):
    def make(f):
        def batches():
            for i in range(per_file):
                if fail_at == (f, i):
                    raise RuntimeError("disk read failed")
                yield _Batch(f * 1000 + i)
        return batches
    return [(f"file{f}.x", make(f)) for f in range(n_files)]


def _encode(part):
    part.result = part.batch.k * 2


def test_order_markers_and_rows():
    seen = []
    encode_job.run(_inputs(3, 5), _encode, seen.append)
    parts = [(p.file, p.row, p.result) for p in seen if isinstance(p, encode_job.Part)]
    assert parts == [(f, 3 * i, 2 * (f * 1000 + i)) for f in range(3) for i in range(5)]
    ends = [(i, p.file, p.parts) for i, p in enumerate(seen) if isinstance(p, encode_job.FileEnd)]
    assert ends == [(5, 0, 5), (11, 1, 5), (17, 2, 5)]


def test_empty_file_still_gets_its_end_marker():
    seen = []
    encode_job.run([("empty.x", lambda: iter(())), *_inputs(1, 2)], _encode, seen.append)
    assert isinstance(seen[0], encode_job.FileEnd) and seen[0].file == 0 and seen[0].parts == 0
    assert [p.file for p in seen[1:]] == [1, 1, 1]


def test_reader_error_names_the_file_and_row():
    with pytest.raises(encode_job.JobError, match=r"reading file1\.x \(after row 6\): RuntimeError: disk read failed"):
        encode_job.run(_inputs(2, 5, fail_at=(1, 2)), _encode, lambda item: None)


def test_passthrough_errors_unchanged():
    class Mine(Exception):
        pass

    def batches():
        yield _Batch(1)
        raise Mine("as it is")

    with pytest.raises(Mine, match="as it is"):
        encode_job.run([("f", batches)], _encode, lambda item: None, passthrough=(Mine,))


def test_encode_error_stops_reader_and_writer():
    def encode(part):
        if part.batch.k == 3:
            raise encode_job.JobError("f: row 9 of the file: bad")
        part.result = 1

    before = threading.active_count()
    with pytest.raises(encode_job.JobError, match="row 9"):
        encode_job.run(_inputs(1, 10_000), encode, lambda item: None, depth=1)
    assert threading.active_count() == before


def test_keyboard_interrupt_stops_every_thread():
    written = []

    def encode(part):
        if part.batch.k == 5:
            raise KeyboardInterrupt
        part.result = 0

    def slow_write(item):
        time.sleep(0.01)
        written.append(item)

    before = threading.active_count()
    with pytest.raises(KeyboardInterrupt):
        encode_job.run(_inputs(1, 10_000), encode, slow_write)
    assert threading.active_count() == before
    assert all(p.batch.k < 5 for p in written)


def test_memory_bounded_by_a_few_batches():
    """With a slow writer, the reader runs at most ~2 * depth + 3 batches ahead of it."""
    read = [0]
    written = [0]
    ahead = []
    depth = 2

    def batches():
        for i in range(60):
            read[0] += 1
            ahead.append(read[0] - written[0])
            yield _Batch(i)

    def write(item):
        if isinstance(item, encode_job.Part):
            time.sleep(0.003)
            written[0] += 1

    encode_job.run([("f", batches)], _encode, write, depth=depth)
    assert written[0] == 60
    assert max(ahead) <= 2 * depth + 3, max(ahead)
