"""`tltok encode --ray` on this machine: 1 vs 2 workers, Ray's per-batch overhead, time to first output.

    python3 bench/bench_ray.py [--mb 32] [--shard-mb 1] [--out bench/results/ray.json]

Input: War and Peace cut into ~1-2 KB documents (bench.data.split_docs), repeated to `--mb` MB and
written as 16 Parquet files (row groups of ~256 KB of text). Encoding o200k_base, one thread per worker.

* direct: one process reads each planned shard's row groups, `encode_arrow(num_threads=1)`, writes
  Parquet (what one worker does, without Ray); and the encode alone.
* cli-N: `tltok encode DATA -o OUT --ray ADDRESS --ray-workers N` on a `ray start --head --num-cpus 2`
  cluster of our own; wall time of the command, the workers' MB/s from its summary, the time from start
  to the first complete shard.
* per-batch: one actor holding `tltok_jit.ray.TokenizeBatch`, batches sent one at a time
  (`ray.get(actor.__call__.remote(table))`) against calling `encode_arrow` on the same tables in the
  driver; (Ray total - direct total) / batches.
"""

from __future__ import annotations

import argparse
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import corpus, split_docs  # noqa: E402


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    env.pop("RAY_ADDRESS", None)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_dataset(d: Path, mb: float) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = split_docs(corpus("english"))
    total = int(mb * 1e6)
    rows, size, k = [], 0, 0
    while size < total:
        t = docs[k % len(docs)]
        rows.append(t)
        size += len(t.encode())
        k += 1
    d.mkdir(parents=True)
    per = -(-len(rows) // 16)
    avg = size / len(rows)
    for i in range(16):
        part = rows[i * per:(i + 1) * per]
        pq.write_table(pa.table({"text": pa.array(part, pa.large_string())}), d / f"part-{i:02d}.parquet",
                       row_group_size=max(1, int(256_000 / avg)))
    return size


def start_cluster(temp: str) -> str:
    port = _free_port()
    cmd = ["ray", "start", "--head", "--num-cpus", "2", "--port", str(port), "--temp-dir", temp,
           "--node-ip-address", "127.0.0.1", "--include-dashboard", "false", "--disable-usage-stats",
           "--dashboard-agent-listen-port", str(_free_port()), "--dashboard-agent-grpc-port", str(_free_port()),
           "--metrics-export-port", str(_free_port()), "--runtime-env-agent-port", str(_free_port())]
    subprocess.run(cmd, env=_env(), check=True, capture_output=True, timeout=120)
    return f"127.0.0.1:{port}"


def stop_cluster(temp: str) -> None:
    """End the processes of our own cluster only (`ray stop` would end every Ray process here)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        out = subprocess.run(["pgrep", "-f", temp], capture_output=True, text=True).stdout.split()
        for pid in map(int, out):
            if pid != os.getpid():
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        time.sleep(3)
    shutil.rmtree(temp, ignore_errors=True)


def direct(data: Path, shard_mb: float, work: Path) -> dict:
    import pyarrow.parquet as pq

    import tltok_jit
    from tltok_jit.integrations import ray_job

    enc = tltok_jit.get_encoding("o200k_base")
    enc.encode_arrow(pq.read_table(sorted(data.glob("*.parquet"))[0]).column("text").slice(0, 10), num_threads=1)
    tasks = ray_job.plan_shards(sorted(data.glob("*.parquet")), "text", shard_mb)
    opts = ray_job.JobOptions(format="parquet", column="text", output_column="tokens", count_only=False,
                              keep_columns=(), all_columns=False, special="text", eos=False, encoding=enc.name,
                              n_vocab=enc.n_vocab)
    work.mkdir()
    w = ray_job.ShardWorker(enc, opts, str(work), {"allowed_special": set(), "disallowed_special": ()})
    t0 = time.perf_counter()
    nbytes = sum(w.run(t)["text_bytes"] for t in tasks)
    whole = time.perf_counter() - t0
    cols = [pq.ParquetFile(t.file).read_row_groups(range(t.rg_start, t.rg_end)).column("text") for t in tasks]
    t0 = time.perf_counter()
    for c in cols:
        enc.encode_arrow(c, num_threads=1, disallowed_special=())
    enc_only = time.perf_counter() - t0
    return {"shards": len(tasks), "mb": nbytes / 1e6, "read_encode_write_s": whole,
            "read_encode_write_mb_s": nbytes / 1e6 / whole, "encode_only_s": enc_only,
            "encode_only_mb_s": nbytes / 1e6 / enc_only}


def cli_run(data: Path, out: Path, address: str, workers: int, shard_mb: float) -> dict:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "tltok_jit.integrations.cli", "encode", str(data), "-o", str(out), "--ray", address,
                        "--ray-workers", str(workers), "--shard-mb", str(shard_mb)],
                       env=_env(), capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(r.stderr)
    m = re.search(r"([\d.]+) s on the workers, ([\d.]+) MB/s; first shard ([\d.]+) s after start", r.stdout)
    return {"workers": workers, "wall_s": wall, "worker_phase_s": float(m[1]), "worker_mb_s": float(m[2]),
            "first_shard_s": float(m[3]), "summary": r.stdout.strip()}


def per_batch(data: Path, address: str, batch_kb: int, n: int) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import ray

    import tltok_jit
    from tltok_jit.ray import TokenizeBatch

    table = pq.read_table(sorted(data.glob("*.parquet"))[0])
    avg = pa.compute.sum(pa.compute.binary_length(table["text"])).as_py() / table.num_rows
    rows = max(1, int(batch_kb * 1000 / avg))
    batches = [table.slice((i * rows) % max(table.num_rows - rows, 1), rows).combine_chunks() for i in range(n)]
    enc = tltok_jit.get_encoding("o200k_base")
    local = TokenizeBatch(encoding=enc)
    local(batches[0])
    t0 = time.perf_counter()
    for b in batches:
        local(b)
    d = time.perf_counter() - t0
    ray.init(address=address, log_to_driver=False, configure_logging=False)
    try:
        actor = ray.remote(num_cpus=1)(TokenizeBatch).remote(encoding="o200k_base")
        ray.get(actor.__call__.remote(batches[0]))
        t0 = time.perf_counter()
        for b in batches:
            ray.get(actor.__call__.remote(b))
        r = time.perf_counter() - t0
    finally:
        ray.shutdown()
    return {"batch_kb": batch_kb, "rows": rows, "batches": n, "direct_ms": d / n * 1e3, "ray_ms": r / n * 1e3,
            "overhead_ms": (r - d) / n * 1e3, "overhead_pct": 100 * (r - d) / d}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=32.0)
    ap.add_argument("--shard-mb", type=float, default=1.0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "ray.json"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tltok-bench-ray-"))
    temp = tempfile.mkdtemp(prefix="tltok-bench-raytmp-")
    res: dict = {"conditions": {"cpus": os.cpu_count(), "mb": args.mb, "shard_mb": args.shard_mb,
                                "encoding": "o200k_base", "loadavg_start": os.getloadavg()}}
    try:
        size = make_dataset(work / "data", args.mb)
        res["conditions"]["text_bytes"] = size
        res["direct"] = direct(work / "data", args.shard_mb, work / "direct")
        print(json.dumps(res["direct"]), flush=True)
        t0 = time.perf_counter()
        address = start_cluster(temp)
        res["cluster_start_s"] = time.perf_counter() - t0
        res["cli"] = []
        for workers in (1, 2, 1, 2):
            out = work / f"out-{workers}"
            shutil.rmtree(out, ignore_errors=True)
            res["cli"].append(cli_run(work / "data", out, address, workers, args.shard_mb))
            print(json.dumps(res["cli"][-1]), flush=True)
        res["per_batch"] = [per_batch(work / "data", address, kb, n) for kb, n in ((1000, 30), (64, 200))]
        print(json.dumps(res["per_batch"]), flush=True)
    finally:
        stop_cluster(temp)
        shutil.rmtree(work, ignore_errors=True)
    best = {w: max(c["worker_mb_s"] for c in res["cli"] if c["workers"] == w) for w in (1, 2)}
    res["scaling_2_over_1"] = best[2] / best[1]
    res["conditions"]["loadavg_end"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({"scaling_2_over_1": res["scaling_2_over_1"], **best}))


if __name__ == "__main__":
    main()
