"""`tltok encode --format megatron|bin [--eos]` on Parquet with nulls, read back from the published layouts."""

from __future__ import annotations

import os

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from shard_readers import read_flat, read_megatron  # noqa: E402

from tltok_jit.integrations.cli import main  # noqa: E402

TEXTS = ["first document", None, "", "second: ünïcödé 日本語 🎉", "<|endoftext|> as text", None, "last"]


@pytest.fixture()
def parquet(tmp_path):
    p = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": pa.array(TEXTS, pa.string()), "n": list(range(len(TEXTS)))}), p,
                   row_group_size=3)
    return p


def _expected(enc, eos_id):
    ids = enc.encode_batch([t for t in TEXTS if t is not None], num_threads=1, disallowed_special=())
    return [d + ([eos_id] if eos_id is not None else []) for d in ids if d]


@pytest.mark.parametrize("eos", [False, True])
@pytest.mark.parametrize("name", ["r50k_base", "o200k_base"])
def test_megatron_cli(tmp_path, parquet, ours, name, eos, capsys):
    enc = ours(name)
    out = tmp_path / "out" / "ds"
    rc = main(["encode", str(parquet), "-o", str(out), "--format", "megatron", "--encoding", name,
               "--threads", "1", *(["--eos"] if eos else [])])
    assert rc == 0
    assert "4 documents (3 null/empty skipped)" in capsys.readouterr().out
    dtype, docs = read_megatron(out)
    assert dtype == (np.uint16 if name == "r50k_base" else np.int32)
    assert [d.tolist() for d in docs] == _expected(enc, enc.eot_token if eos else None)
    assert sorted(p.name for p in out.parent.iterdir()) == ["ds.bin", "ds.idx"]


@pytest.mark.parametrize("eos", [False, True])
def test_bin_cli(tmp_path, parquet, ours, eos):
    enc = ours("o200k_base")
    rc = main(["encode", str(parquet), "-o", str(tmp_path / "train.bin"), "--format", "bin", "--quiet",
               "--threads", "1", *(["--eos"] if eos else [])])
    assert rc == 0
    meta, ids = read_flat(tmp_path / "train")
    exp = _expected(enc, enc.eot_token if eos else None)
    assert ids.tolist() == [i for d in exp for i in d]
    assert meta["dtype"] == "uint32" and meta["encoding"] == "o200k_base" and meta["n_documents"] == 4
    assert meta["eos"] is eos and meta["skipped_empty_documents"] == 3


def test_pack_unchanged(tmp_path, parquet):
    assert main(["encode", str(parquet), "-o", str(tmp_path / "p.bin"), "--pack", "4", "--eos", "--quiet"]) == 0
    assert (tmp_path / "p.json").exists()


@pytest.mark.parametrize("extra, message", [
    (["--format", "megatron", "--pack", "8"], "--format megatron and --pack exclude each other"),
    (["--format", "bin", "--count-only"], "--format bin and --count-only exclude each other"),
    (["--format", "bin", "--keep-columns", "n"], "--keep-columns only applies to --format parquet"),
    (["--format", "megatron", "--output-column", "x"], "--output-column only applies to --format parquet"),
    (["--eos"], "--eos only applies to --pack or --format megatron|bin"),
    (["--format", "bin", "--column", "missing"], "column 'missing' not found"),
])
def test_errors_one_line_rc2(tmp_path, parquet, capsys, extra, message):
    rc = main(["encode", str(parquet), "-o", str(tmp_path / "o"), "--quiet", *extra])
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err and err.count("\n") == 1, err
    assert not [p for p in tmp_path.iterdir() if p.name != "in.parquet"]


def test_existing_output_needs_overwrite(tmp_path, parquet, capsys):
    (tmp_path / "ds.idx").write_bytes(b"old")
    rc = main(["encode", str(parquet), "-o", str(tmp_path / "ds"), "--format", "megatron", "--quiet"])
    assert rc == 2 and "output exists" in capsys.readouterr().err
    assert (tmp_path / "ds.idx").read_bytes() == b"old" and not (tmp_path / "ds.bin").exists()
    assert main(["encode", str(parquet), "-o", str(tmp_path / "ds"), "--format", "megatron", "--quiet",
                 "--overwrite"]) == 0
    assert read_megatron(tmp_path / "ds")[1]


def test_stale_temp_of_killed_run_removed(tmp_path, parquet):
    dead = 2**22 + 12345  # above the default pid_max: never a live process
    stale = tmp_path / f".ds.bin.tltok-tmp-{dead}"
    stale.write_bytes(b"partial")
    assert main(["encode", str(parquet), "-o", str(tmp_path / "ds"), "--format", "megatron", "--quiet"]) == 0
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds.bin", "ds.idx", "in.parquet"]
    assert os.path.getsize(tmp_path / "ds.bin") > 0
