"""`tltok encode` end to end on a large Parquet file, next to its parts and a tiktoken + pyarrow job.

    python bench/bench_e2e.py --input /tmp/e2e/docs.parquet          # made if missing (>= 240 MB of text)
    python bench/bench_e2e.py --input ... --threads 2 --repeat 3 --out bench/results/e2e.md
    python bench/bench_e2e.py --package-root /path/to/other/checkout  # time another version's CLI

Every number is one fresh process (best of --repeat); MB = 10^6 bytes of UTF-8 text in the column:

- read: the CLI's reader (`cli.Reader.batches`, --batch-mb 8) over the text column, nothing else;
- encode_arrow: the whole column, read into memory first, in one `encode_arrow` call (untimed warm-up
  on other text);
- encode_batches: the same, one call per batch of the CLI's reader (8 MB), all read beforehand;
- write: the ids of every batch (encoded beforehand) written as the CLI writes them by default
  (`parquet_write.writer_options`: zstd, the ids PLAIN without a dictionary);
- write_options: the same ids written with each of WRITE_OPTIONS (codec, level, encodings, statistics,
  page size) in one process, interleaved --repeat times: best CPU s, file size, read back equal;
- cli: `tltok encode IN -o OUT --threads N` in a fresh process (`runpy` of `tltok_jit.integrations.cli`, as
  `python -m` runs it, then the peak RSS, VmHWM, is printed): "end to end" is the
  job by the CLI's own clock (from the first read to the renamed output, as its summary line
  prints it), start-up is the rest of the command's wall time (import, tables, cached kernels);
  CPU s of the whole command and peak RSS from wait4;
- tiktoken + pyarrow: what a user would write: `iter_batches`, `encode_ordinary_batch(texts,
  num_threads=N)`, `pa.array(ids, type=list<uint32>)`, `ParquetWriter(zstd)`; tiktoken's load not timed.

The input (`--make-input`): ~1.5 KB documents (whole lines of the shared corpora, `--corpus english`
= War and Peace, `mixed` = War and Peace + 三国演义 + all UDHR translations), repeated until the text
holds at least --mb MB, written with row groups of 16,384 rows (snappy). It is made in /tmp, never
in the repository. The outputs are checked: the CLI's ids equal tiktoken's, row for row.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BENCH_SHARED") or os.environ.get("TLTOK_SHARED") or REPO.parent / "shared")


# ------------------------------------------------------------------------------------------------
# input
# ------------------------------------------------------------------------------------------------

def _docs(text: str, size: int = 1500) -> list[str]:
    out, cur, n = [], [], 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        n += len(line.encode("utf-8"))
        if n >= size:
            out.append("".join(cur))
            cur, n = [], 0
    if cur:
        out.append("".join(cur))
    return out


def make_input(path: Path, corpus: str, mb: float) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    corpora = SHARED / "corpora"
    texts = [(corpora / "english-war-and-peace.txt").read_text(encoding="utf-8")]
    if corpus == "mixed":
        texts.append((corpora / "chinese-sanguo-yanyi.txt").read_text(encoding="utf-8"))
        texts += [p.read_text(encoding="utf-8") for p in sorted((corpora / "udhr").glob("*.txt"))]
    base = [d for t in texts for d in _docs(t)]
    size = sum(len(d.encode("utf-8")) for d in base)
    reps = -(-int(mb * 1e6) // size)
    docs = base * reps
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(range(len(docs)), pa.int64()), "text": docs}), str(path),
                   row_group_size=16384, compression="snappy")


def text_mb(path: Path) -> tuple[float, int]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(str(path))
    total = 0
    for b in pf.iter_batches(columns=["text"], batch_size=65536):
        total += int(pc.sum(pc.binary_length(b.column(0))).as_py() or 0)
    return total / 1e6, pf.metadata.num_rows


# ------------------------------------------------------------------------------------------------
# workers (one fresh process each)
# ------------------------------------------------------------------------------------------------

def _clock():
    return time.perf_counter(), time.process_time()


def _since(t0) -> dict:
    w, c = _clock()
    return {"wall": w - t0[0], "cpu": c - t0[1]}


def _warm_text():
    import pyarrow as pa

    udhr = sorted((SHARED / "corpora" / "udhr").glob("*.txt"))
    docs = [p.read_text(encoding="utf-8")[:1500] for p in udhr] or ["warm-up text", "日本語"]
    return pa.array(docs)


def worker_read(inp: Path, threads: int) -> dict:
    from tltok_jit.integrations import cli

    t0 = _clock()
    r = cli.Reader(inp, 8_000_000, "text")
    n = 0
    for b in r.batches(["text"], "text"):
        n += b.num_rows
    return _since(t0)


def worker_encode(inp: Path, threads: int) -> dict:
    import gc

    import pyarrow.parquet as pq

    import tltok_jit

    enc = tltok_jit.get_encoding("o200k_base")
    for _ in range(2):
        enc.encode_arrow(_warm_text(), num_threads=threads, disallowed_special=())
    col = pq.read_table(str(inp), columns=["text"])["text"]
    gc.disable()
    t0 = _clock()
    res = enc.encode_arrow(col, num_threads=threads, large_list=False, disallowed_special=())
    out = _since(t0)
    out["tokens"] = sum(len(c.values) for c in res.chunks)
    return out


def worker_encode_batches(inp: Path, threads: int) -> dict:
    import gc

    import tltok_jit
    from tltok_jit.integrations import cli

    enc = tltok_jit.get_encoding("o200k_base")
    for _ in range(2):
        enc.encode_arrow(_warm_text(), num_threads=threads, disallowed_special=())
    cols = [b.column(0) for b in cli.Reader(inp, 8_000_000, "text").batches(["text"], "text")]
    gc.disable()
    t0 = _clock()
    n = 0
    for col in cols:
        n += len(enc.encode_arrow(col, num_threads=threads, large_list=False, disallowed_special=()).values)
    out = _since(t0)
    out["tokens"] = n
    out["batches"] = len(cols)
    return out


def worker_write(inp: Path, threads: int) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    import tltok_jit
    from tltok_jit.integrations import cli
    from tltok_jit.integrations.parquet_write import writer_options

    enc = tltok_jit.get_encoding("o200k_base")
    batches = [pa.RecordBatch.from_arrays([enc.encode_arrow(b.column(0), num_threads=threads, large_list=False,
                                                            disallowed_special=())], names=["tokens"])
               for b in cli.Reader(inp, 8_000_000, "text").batches(["text"], "text")]
    options = writer_options(batches[0].schema, {"tokens"})
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        t0 = _clock()
        w = pq.ParquetWriter(str(Path(d) / "w.parquet"), batches[0].schema, **options)
        for b in batches:
            w.write_batch(b)
        w.close()
        return _since(t0)


def worker_tiktoken(inp: Path, threads: int) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench.oracle import tiktoken_encoding

    t_load = _clock()
    enc = tiktoken_encoding("o200k_base")
    enc.encode_ordinary_batch(["warm up"], num_threads=threads)
    load = _since(t_load)
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        out = Path(d) / "tk.parquet"
        t0 = _clock()
        pf = pq.ParquetFile(str(inp))
        writer = None
        for b in pf.iter_batches(batch_size=4096, columns=["text"]):
            texts = b.column(0).to_pylist()
            ids = enc.encode_ordinary_batch([t or "" for t in texts], num_threads=threads)
            arr = pa.array(ids, type=pa.list_(pa.uint32()))
            tb = pa.table({"tokens": arr})
            if writer is None:
                writer = pq.ParquetWriter(str(out), tb.schema, compression="zstd")
            writer.write_table(tb)
        writer.close()
        res = _since(t0)
        res["startup"] = load["wall"]
        if os.environ.get("E2E_KEEP_TIKTOKEN"):
            os.replace(out, os.environ["E2E_KEEP_TIKTOKEN"])
        return res


# the ids column's writer settings compared by --modes write_options: name -> ParquetWriter keywords
WRITE_OPTIONS = {
    "zstd + dictionary (--ids-encoding dictionary)": {"compression": "zstd"},
    "zstd, no dictionary (PLAIN: the CLI's default)": {"compression": "zstd", "use_dictionary": False},
    "zstd 3, no dictionary": {"compression": "zstd", "compression_level": 3, "use_dictionary": False},
    "zstd, no dictionary, no statistics": {"compression": "zstd", "use_dictionary": False, "write_statistics": False},
    "zstd, no dictionary, 8 MB pages": {"compression": "zstd", "use_dictionary": False, "data_page_size": 8 << 20},
    "zstd, delta_binary_packed": {"compression": "zstd", "use_dictionary": False,
                                  "column_encoding": "DELTA_BINARY_PACKED"},
    "zstd, byte_stream_split (--ids-encoding byte_stream_split)": {"compression": "zstd", "use_dictionary": False,
                                                                   "use_byte_stream_split": True},
    "zstd, byte_stream_split, no statistics": {"compression": "zstd", "use_dictionary": False,
                                               "use_byte_stream_split": True, "write_statistics": False},
    "zstd, byte_stream_split, 8 MB pages": {"compression": "zstd", "use_dictionary": False,
                                            "use_byte_stream_split": True, "data_page_size": 8 << 20},
    "zstd 3, byte_stream_split": {"compression": "zstd", "compression_level": 3, "use_dictionary": False,
                                  "use_byte_stream_split": True},
    "zstd -1, byte_stream_split": {"compression": "zstd", "compression_level": -1, "use_dictionary": False,
                                   "use_byte_stream_split": True},
    "zstd + dictionary, then byte_stream_split": {"compression": "zstd", "use_byte_stream_split": True},
    "lz4, no dictionary": {"compression": "lz4", "use_dictionary": False},
    "lz4, byte_stream_split": {"compression": "lz4", "use_dictionary": False, "use_byte_stream_split": True},
    "snappy, no dictionary": {"compression": "snappy", "use_dictionary": False},
    "snappy, byte_stream_split": {"compression": "snappy", "use_dictionary": False, "use_byte_stream_split": True},
    "none, no dictionary": {"compression": "none", "use_dictionary": False},
}


def worker_write_options(inp: Path, threads: int) -> dict:
    """Every WRITE_OPTIONS setting writing the same ids (the CLI's batches, encoded beforehand), interleaved
    --repeat times in this process: best CPU s and wall s, file size, ids read back equal."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import tltok_jit
    from tltok_jit.integrations import cli

    enc = tltok_jit.get_encoding("o200k_base")
    batches = [pa.RecordBatch.from_arrays([enc.encode_arrow(b.column(0), num_threads=threads, large_list=False,
                                                            disallowed_special=())], names=["tokens"])
               for b in cli.Reader(inp, 8_000_000, "text").batches(["text"], "text")]
    want = pa.Table.from_batches(batches)["tokens"].combine_chunks()
    out: dict = {}
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        path = Path(d) / "w.parquet"
        for _ in range(int(os.environ.get("E2E_REPEAT", "3"))):
            for name, kw in WRITE_OPTIONS.items():
                t0 = _clock()
                w = pq.ParquetWriter(str(path), batches[0].schema, **kw)
                for b in batches:
                    w.write_batch(b)
                w.close()
                r = _since(t0)
                best = out.setdefault(name, {"wall": r["wall"], "cpu": r["cpu"]})
                best["wall"], best["cpu"] = min(best["wall"], r["wall"]), min(best["cpu"], r["cpu"])
                best["bytes"] = path.stat().st_size
                t1 = _clock()
                got = pq.read_table(str(path))["tokens"]
                best["read_cpu"] = min(best.get("read_cpu", 1e9), _since(t1)["cpu"])
                if "equal" not in best:
                    best["equal"] = got.type == want.type and got.combine_chunks().equals(want)
                del got
                path.unlink()
    return {"options": out, "tokens": len(want.values)}


WORKERS = {"read": worker_read, "write_options": worker_write_options, "encode_arrow": worker_encode,
           "encode_batches": worker_encode_batches, "write": worker_write, "tiktoken": worker_tiktoken}


def peak_rss_mb() -> float:
    """This process's peak RSS since exec (VmHWM; ru_maxrss would carry over the forking parent's)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cli_in_this_process(argv: list[str]) -> int:
    """`python -m tltok_jit.integrations.cli ARGV`, then the peak RSS on stderr's last line."""
    import runpy

    sys.argv = ["tltok", *argv]
    rc = 0
    try:
        runpy.run_module("tltok_jit.integrations.cli", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    sys.stdout.flush()
    print(json.dumps({"peak_rss_mb": peak_rss_mb()}), file=sys.stderr)
    return rc


def _run_child(argv: list[str], env: dict) -> tuple[float, int, dict, str, str]:
    """(wall s, rc, {peak RSS MB, CPU s}, stdout, stderr) of a fresh process."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        use = {"cpu_all": usage.ru_utime + usage.ru_stime}
        return wall, rc, use, out.read().decode(), err.read().decode()


def _env(package_root: Path, threads: int) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(package_root) + os.pathsep + str(REPO)
    env["TIKTOKEN_CACHE_DIR"] = ""
    return env


def measure_worker(mode: str, inp: Path, threads: int, package_root: Path) -> dict:
    wall, rc, use, out, err = _run_child([sys.executable, __file__, "--worker", mode, "--input", str(inp),
                                          "--threads", str(threads)], _env(package_root, threads))
    if rc != 0:
        raise RuntimeError(f"{mode} worker failed ({rc}): {err[-2000:]}")
    res = json.loads(out.strip().splitlines()[-1])
    res.update(use)
    return res  # rss_mb: set by the worker


_SUMMARY = re.compile(r"tltok: ([\d,]+) rows, ([\d,]+) tokens, .*?([\d.]+) s, ([\d.]+) MB/s")


def measure_cli(inp: Path, threads: int, package_root: Path, extra: list[str], keep: bool = True) -> dict:
    """The whole command from outside; the job itself (read, encode, write, rename) by the CLI's own
    clock, which starts after import, table load and kernel load: start-up = the rest."""
    env = _env(package_root, threads)
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        out = Path(d) / "out.parquet"
        argv = ["encode", str(inp), "-o", str(out), "--threads", str(threads), *extra]
        wall, rc, use, stdout, err = _run_child([sys.executable, __file__, "--worker", "cli", "--cli-args",
                                                 "\x1f".join(argv)], env)
        if rc != 0:
            raise RuntimeError(f"cli failed: {err[-2000:]}")
        if keep and os.environ.get("E2E_KEEP_CLI"):
            os.replace(out, os.environ["E2E_KEEP_CLI"])
    m = _SUMMARY.search(stdout)
    if m is None:
        raise RuntimeError(f"no summary line in the CLI's output: {stdout!r}")
    job = float(m.group(3))
    rss = json.loads(err.strip().splitlines()[-1])["peak_rss_mb"]
    return {"wall": wall, "e2e": job, "startup": wall - job, "tokens": int(m.group(2).replace(",", "")),
            "rss_mb": rss, **use}


# ------------------------------------------------------------------------------------------------
# driver
# ------------------------------------------------------------------------------------------------

def check_ids(a: Path, b: Path) -> bool:
    """The `tokens` columns of two Parquet files hold the same lists (chunking aside)."""
    import pyarrow.parquet as pq

    ta, tb = pq.read_table(str(a), columns=["tokens"]), pq.read_table(str(b), columns=["tokens"])
    ok = ta.num_rows == tb.num_rows and ta["tokens"].combine_chunks().equals(tb["tokens"].combine_chunks())
    a.unlink()
    b.unlink()
    return ok


def _best(runs: list[dict], key: str = "wall") -> dict:
    return min(runs, key=lambda r: r[key])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", type=Path, default=Path("/tmp/tltok-e2e/docs.parquet"))
    ap.add_argument("--corpus", choices=("english", "mixed"), default="english")
    ap.add_argument("--mb", type=float, default=240.0, help="MB of text in a made input (default 240)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--modes", default="read,encode_arrow,encode_batches,write,cli,tiktoken")
    ap.add_argument("--package-root", type=Path, default=REPO, help="checkout whose tltok_jit the CLI runs")
    ap.add_argument("--baseline-root", type=Path, default=None,
                    help="also time the CLI of this checkout (mode cli_baseline), interleaved with ours")
    ap.add_argument("--cli-args", default="", help="extra arguments for the CLI run, e.g. '--batch-mb 16'")
    ap.add_argument("--cli-alt", default="", metavar="ARGS",
                    help="also time the CLI with these arguments added (mode cli_alt), interleaved with the others")
    ap.add_argument("--out", type=Path, default=None, help="append a Markdown table (and JSON beside it)")
    ap.add_argument("--label", default="")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        if args.worker == "cli":
            return cli_in_this_process(args.cli_args.split("\x1f"))
        res = WORKERS[args.worker](args.input, args.threads)
        res["rss_mb"] = peak_rss_mb()
        print(json.dumps(res))
        return 0

    if not args.input.exists():
        print(f"making {args.input} ({args.corpus}, >= {args.mb:.0f} MB of text)...", file=sys.stderr)
        make_input(args.input, args.corpus, args.mb)
    mb, rows = text_mb(args.input)
    load0 = os.getloadavg()
    results: dict[str, dict] = {}
    keep_cli = args.input.with_name("e2e-cli-out.parquet")
    keep_tk = args.input.with_name("e2e-tiktoken-out.parquet")
    os.environ["E2E_KEEP_CLI"] = str(keep_cli)
    os.environ["E2E_KEEP_TIKTOKEN"] = str(keep_tk)
    modes = [m for m in args.modes.split(",") if m]
    if args.baseline_root is not None and "cli" in modes and "cli_baseline" not in modes:
        modes.insert(modes.index("cli"), "cli_baseline")
    if args.cli_alt and "cli" in modes:
        modes.insert(modes.index("cli") + 1, "cli_alt")
    extra = args.cli_args.split()
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    os.environ["E2E_REPEAT"] = str(args.repeat)
    for rep in range(args.repeat):  # interleaved, so a change of machine load touches every mode alike
        for mode in modes:
            if (mode == "tiktoken" and rep >= 2) or (mode == "write_options" and rep >= 1):
                continue  # tiktoken: slow, two runs show its rate; write_options repeats inside its process
            if mode in ("cli", "cli_baseline", "cli_alt"):
                root = args.baseline_root if mode == "cli_baseline" else args.package_root
                more = args.cli_alt.split() if mode == "cli_alt" else []
                r = measure_cli(args.input, args.threads, root, extra + more, keep=mode == "cli")
            else:
                r = measure_worker(mode, args.input, args.threads, args.package_root)
            runs[mode].append(r)
            print(f"  {mode}: {json.dumps(r)}", file=sys.stderr, flush=True)
    for mode in modes:
        if mode == "write_options":
            results[mode] = runs[mode][0]
            continue
        results[mode] = dict(_best(runs[mode], "e2e" if mode.startswith("cli") else "wall"))
        results[mode]["runs"] = runs[mode]
    load1 = os.getloadavg()
    exact = check_ids(keep_cli, keep_tk) if "cli" in modes and "tiktoken" in modes else None

    lines = []
    cond = (f"{args.label + ': ' if args.label else ''}{args.input.name}: {mb:.1f} MB of text in {rows:,} rows "
            f"({args.corpus} corpus), o200k_base, --threads {args.threads}, best of {args.repeat} fresh processes; "
            f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
            f"{load0[0]:.1f} at start, {load1[0]:.1f} at end; package {args.package_root}")
    lines.append(f"\n### {cond}\n")
    lines.append("| step | seconds (wall) | CPU s | MB/s | vs encode_arrow | peak RSS MB |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    ref = results.get("encode_arrow", {}).get("wall")

    def row(name, secs, cpu, rss):
        rate = mb / secs
        vs = f"{ref / secs:.0%}" if ref else ""
        lines.append(f"| {name} | {secs:.2f} | {cpu} | {rate:.1f} | {vs} | {rss:.0f} |")

    for mode in modes:
        r = results[mode]
        if mode == "write_options":
            continue
        if mode == "cli_baseline":
            row(f"baseline `tltok encode` ({args.baseline_root}), end to end", r["e2e"], "", r["rss_mb"])
            lines.append(f"| baseline whole command | {r['wall']:.2f} | {r['cpu_all']:.2f} | {mb / r['wall']:.1f} | | |")
        elif mode == "cli_alt":
            row(f"`tltok encode {args.cli_alt}`, end to end", r["e2e"], "", r["rss_mb"])
            lines.append(f"| `tltok encode {args.cli_alt}`, whole command | {r['wall']:.2f} | {r['cpu_all']:.2f} | "
                         f"{mb / r['wall']:.1f} | | |")
        elif mode == "cli":
            row("`tltok encode`, end to end (the CLI's own clock: read + encode + write)", r["e2e"], "", r["rss_mb"])
            lines.append(f"| `tltok encode`, whole command (fresh process) | {r['wall']:.2f} | {r['cpu_all']:.2f} | "
                         f"{mb / r['wall']:.1f} | | |")
            lines.append(f"| `tltok encode` start-up (import, tables, cached kernels) | {r['startup']:.2f} | | | | |")
        elif mode == "tiktoken":
            row("tiktoken + pyarrow job (load not timed)", r["wall"], f"{r['cpu']:.2f}", r["rss_mb"])
            lines.append(f"| tiktoken load | {r['startup']:.2f} | | | | |")
        else:
            label = {"read": "read alone (the CLI's reader)", "encode_arrow": "`encode_arrow`, in memory",
                     "encode_batches": f"`encode_arrow` on the CLI's {r.get('batches', '')} batches, in memory",
                     "write": "write alone (as the CLI: zstd, ids PLAIN)"}[mode]
            row(label, r["wall"], f"{r['cpu']:.2f}", r["rss_mb"])
    if all(m in results for m in ("read", "encode_arrow", "write", "cli")):
        cpu = {m: min(x["cpu"] for x in runs[m]) for m in ("read", "encode_arrow", "write")}
        ceiling = cpu["encode_arrow"] / sum(cpu.values())
        got = ref / results["cli"]["e2e"]
        lines.append(f"\n2-core ceiling, encoder CPU / (encoder + read + write CPU): {cpu['encode_arrow']:.2f} / "
                     f"({cpu['encode_arrow']:.2f} + {cpu['read']:.2f} + {cpu['write']:.2f}) = {ceiling:.0%} of "
                     f"`encode_arrow`; the CLI reached {got:.0%}, {got / ceiling:.2f} of the ceiling.")
    if "write_options" in results:
        opts = results["write_options"]["options"]
        base = next(o for name, o in opts.items() if "the CLI's default" in name)
        lines += ["", f"Writer settings for the ids alone ({results['write_options']['tokens']:,} ids, list<uint32>, "
                  f"the CLI's batches; best of {args.repeat} interleaved, one process):", "",
                  "| ParquetWriter setting for the ids | CPU s | vs default | MB | vs default "
                  "| read back CPU s |",
                  "|---|---:|---:|---:|---:|---:|"]
        for name, o in opts.items():
            assert o["equal"], name
            lines.append(f"| {name} | {o['cpu']:.2f} | {o['cpu'] / base['cpu']:.0%} | {o['bytes'] / 1e6:.1f} | "
                         f"{o['bytes'] / base['bytes']:.0%} | {o['read_cpu']:.2f} |")
    if exact is not None:
        lines.append(f"\nIds of the CLI's output equal the tiktoken job's, row for row: {'yes' if exact else 'NO'}.")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(text)
        with open(args.out.with_suffix(".json"), "a", encoding="utf-8") as f:
            f.write(json.dumps({"conditions": cond, "mb": mb, "rows": rows, "exact": exact,
                                "results": results}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
