"""Arrow batch benchmark: `Encoding.encode_arrow` on a Parquet column against tiktoken, HF tokenizers,
gigatoken and fastokens batch APIs, and 100,000 short strings.

    python bench/bench_arrow.py                       # o200k_base; english, code, chinese; 1 and 2 threads
    python bench/bench_arrow.py --repeat 3 --encoding r50k_base --corpora english
    python bench/bench_arrow.py --libs tltok_jit[arrow],tiktoken --threads 2

Inputs (bench/data.py, deterministic): each corpus (english = War and Peace 3.2 MB, code = CPython
stdlib .py files >= 3 MB, chinese = 三国演义 1.8 MB) split at line ends into ~1-2 KB documents,
written once to a Parquet file (bench/.cache/arrow/docs-*.parquet, columns corpus, text). The
short-string case is 100,000 consecutive 20-character slices of the English corpus.

Methodology (as bench/README.md): every number is ONE timed call in a FRESH process (the library
is built there, warmed up on text the target does not contain: the UDHR translations + the emoji
file, split the same way, twice), pinned to N CPUs with sched_setaffinity, with RAYON_NUM_THREADS /
NUMBA_NUM_THREADS / FASTOKENS_BPE_THREADS = N. `--repeat` keeps the fastest of N processes. The
Parquet column is read outside the timer: ours gets the Arrow column as read (zero-copy), the others
get `column.to_pylist()` (a list of str, also outside the timer). After the timer, every result is
compared with tiktoken's ids (computed once in the parent) per document: `exact`.

MB = 10**6 bytes of UTF-8 input; ratio = MB/s of the library / MB/s of tiktoken
`encode_ordinary_batch` with the same thread count (short strings: strings/s / tiktoken's plain
loop of `encode_ordinary`). The machine may be shared: wall numbers are inflated by other load
(recorded as the load average); `cpuMB/s` (per CPU-second of the whole process) is steadier.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CACHE = ROOT / "bench" / ".cache" / "arrow"
MARK = "@@RESULT@@"
LIBS = ("tltok_jit[arrow]", "tiktoken", "hf-tokenizers", "gigatoken", "fastokens")
SHORT_LIBS = ("tltok_jit[arrow]", "tiktoken-loop", "tiktoken", "gigatoken", "tltok_jit-loop")


# ------------------------------------------------------------------------------------------------
# inputs (parent)
# ------------------------------------------------------------------------------------------------

def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, ensure_ascii=False).encode()).hexdigest()[:16]


def build_parquet(corpora: list[str]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench import data

    names, texts = [], []
    for c in corpora:
        docs = data.split_docs(data.corpus(c))
        names += [c] * len(docs)
        texts += docs
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"docs-{_digest([names, texts])}.parquet"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        pq.write_table(pa.table({"corpus": names, "text": texts}), tmp, row_group_size=4096)
        os.replace(tmp, path)
    return path


def oracle_for(path: Path, encoding: str, corpus: str) -> Path:
    import numpy as np

    from bench import oracle

    out = CACHE / f"oracle-{path.stem}-{encoding}-{corpus}.npz"
    if out.exists():
        return out
    docs = _read_docs(path, corpus)
    ids = oracle.tiktoken_encoding(encoding).encode_ordinary_batch(docs, num_threads=2)
    lens = np.array([len(x) for x in ids], dtype=np.int64)
    flat = np.concatenate([np.asarray(x, dtype=np.uint32) for x in ids]) if ids else np.zeros(0, np.uint32)
    np.savez(out, flat=flat, lens=lens)
    return out


def short_oracle(encoding: str, n: int) -> Path:
    import numpy as np

    from bench import data, oracle

    out = CACHE / f"oracle-short-{n}-{encoding}.npz"
    if out.exists():
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    strs = data.short_strings(n)
    ids = oracle.tiktoken_encoding(encoding).encode_ordinary_batch(strs, num_threads=2)
    np.savez(out, flat=np.concatenate([np.asarray(x, dtype=np.uint32) for x in ids]),
             lens=np.array([len(x) for x in ids], dtype=np.int64))
    return out


def _read_docs(path: Path, corpus: str, arrow: bool = False):
    import pyarrow.parquet as pq

    t = pq.read_table(path, filters=[("corpus", "=", corpus)], columns=["text"])
    col = t["text"]
    return col if arrow else col.to_pylist()


# ------------------------------------------------------------------------------------------------
# worker (fresh process)
# ------------------------------------------------------------------------------------------------

class _Ours:
    label = "tltok_jit[arrow]"

    def __init__(self, encoding: str):
        import tltok_jit

        self.enc = tltok_jit.get_encoding(encoding)
        self.api = "Encoding.encode_arrow(parquet column, num_threads=N) -> list<uint32>"

    def batch(self, col, threads):
        return self.enc.encode_arrow(col, num_threads=threads, disallowed_special=())

    def prepare(self, docs, typ=None):
        import pyarrow as pa

        return pa.array(docs, type=typ or pa.large_string())


def worker(job: dict) -> dict:
    threads = int(job["threads"])
    try:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, set(cpus[:threads]))
    except (AttributeError, OSError):
        pass
    import numpy as np

    from bench import adapters, data
    from bench.worker import timed

    lib, mode, encoding = job["lib"], job["mode"], job["encoding"]
    out: dict = {"status": "ok"}
    warm_text = data.warmup_text()
    if mode == "docs":
        col = _read_docs(Path(job["parquet"]), job["corpus"], arrow=True)
        warm = data.split_docs(warm_text)
    else:
        strs = data.short_strings(job["n"])
        warm = [warm_text[i:i + 20] for i in range(0, len(warm_text) - 20, 20)][:5000]
    try:
        if lib in ("tltok_jit[arrow]", "tltok_jit-loop"):
            ad = _Ours(encoding)
            if lib == "tltok_jit-loop":
                f = ad.enc.encode_ordinary
                call = lambda x: [f(s) for s in x]  # noqa: E731
                prep = list
                out["api"] = "[encode_ordinary(s) for s in strs]"
            else:
                call = lambda x: ad.batch(x, threads)  # noqa: E731
                prep = ad.prepare
                out["api"] = ad.api
        else:
            name = {"tiktoken-loop": "tiktoken"}.get(lib, lib)
            ad = adapters.ADAPTERS[name](encoding)
            if lib == "tiktoken-loop":
                call = ad.short_loop
                out["api"] = ad.api.get("short_loop", "")
            else:
                call = lambda x: ad.batch(x, threads)  # noqa: E731
                out["api"] = ad.api.get("batch", "")
            prep = list
    except (adapters.NotAvailable, ImportError) as e:
        return {"status": "n/a", "reason": str(e)}
    if mode == "docs":
        target = col if lib == "tltok_jit[arrow]" else col.to_pylist()
        texts = col.to_pylist()
    else:
        target = prep(strs)
        texts = strs
    nbytes = sum(len(s.encode("utf-8")) for s in texts)
    t0 = time.perf_counter()
    if lib == "tltok_jit[arrow]" and mode == "docs":
        w = ad.prepare(warm, col.type)  # the same Arrow type as the target column: same compiled kernels
    else:
        w = prep(warm)
    call(w)
    call(w)
    out["warmup_s"] = time.perf_counter() - t0
    gc.collect()
    result, dt, cpu = timed(call, target)
    out.update(seconds=dt, cpu_seconds=cpu, bytes=nbytes, items=len(texts))
    flat, lens = adapters.to_flat(result)
    ref = np.load(job["oracle"])
    same = (flat.size == ref["flat"].size and np.array_equal(flat, ref["flat"])
            and lens.size == ref["lens"].size and np.array_equal(lens, ref["lens"]))
    out["exact"] = bool(same)
    out["n_tokens"] = int(flat.size)
    return out


# ------------------------------------------------------------------------------------------------
# runner (parent)
# ------------------------------------------------------------------------------------------------

def _env(threads: int) -> dict:
    from bench.runner import worker_env

    return worker_env(threads)


def run_job(job: dict, timeout: float) -> dict:
    try:
        p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(job)],
                           env=_env(int(job["threads"])), cwd=str(ROOT), capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "n/a", "reason": f"timeout > {timeout:.0f}s"}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    tail = (p.stderr or p.stdout or "").strip().splitlines()[-3:]
    return {"status": "error", "reason": f"worker exited {p.returncode}: {' | '.join(tail)[:300]}"}


def best_of(job: dict, repeat: int, timeout: float) -> dict:
    best = None
    for _ in range(repeat):
        r = run_job(job, timeout)
        if r.get("status") != "ok":
            return r
        if best is None or r["seconds"] < best["seconds"]:
            best = r
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoding", default="o200k_base")
    ap.add_argument("--corpora", default="english,code,chinese")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--short", type=int, default=100_000, help="number of ~20-char strings (0: skip)")
    ap.add_argument("--short-libs", default=",".join(SHORT_LIBS))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "arrow.md"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        try:
            res = worker(json.loads(a.worker))
        except Exception as e:  # noqa: BLE001
            import traceback

            res = {"status": "error", "reason": f"{type(e).__name__}: {e}", "tb": traceback.format_exc()[-1500:]}
        print(MARK + json.dumps(res), flush=True)
        return 0

    corpora = [c for c in a.corpora.split(",") if c]
    threads = [int(t) for t in a.threads.split(",")]
    libs = [x for x in a.libs.split(",") if x]
    load0 = os.getloadavg()
    t_start = time.time()
    path = build_parquet(corpora)
    rows = []
    for corpus in corpora:
        orc = oracle_for(path, a.encoding, corpus)
        for th in threads:
            for lib in libs:
                job = {"lib": lib, "mode": "docs", "encoding": a.encoding, "corpus": corpus, "threads": th,
                       "parquet": str(path), "oracle": str(orc)}
                r = best_of(job, a.repeat, a.timeout)
                r.update(lib=lib, corpus=corpus, threads=th)
                rows.append(r)
                _progress(r)
    short_rows = []
    if a.short:
        orc = short_oracle(a.encoding, a.short)
        for lib in [x for x in a.short_libs.split(",") if x]:
            for th in (threads if lib in ("tltok_jit[arrow]", "tiktoken", "gigatoken") else [1]):
                job = {"lib": lib, "mode": "short", "encoding": a.encoding, "n": a.short, "threads": th,
                       "oracle": str(orc)}
                r = best_of(job, a.repeat, a.timeout)
                r.update(lib=lib, corpus=f"{a.short:,} x 20 chars", threads=th)
                short_rows.append(r)
                _progress(r)
    load1 = os.getloadavg()
    md = report(rows, short_rows, a, load0, load1, time.time() - t_start)
    print(md)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(md, encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps({"docs": rows, "short": short_rows}, indent=1), encoding="utf-8")
    return 0


def _progress(r: dict) -> None:
    if r.get("status") == "ok":
        msg = f"{r['seconds']:.3f} s ({r['bytes'] / 1e6 / r['seconds']:.1f} MB/s) exact={r['exact']}"
    else:
        msg = f"{r.get('status')}: {r.get('reason')}"
    print(f"  {r['corpus']:>10} {r['lib']:>18} x{r['threads']}: {msg}", file=sys.stderr, flush=True)


def report(rows, short_rows, a, load0, load1, secs) -> str:
    import numba
    import pyarrow

    try:
        import tiktoken

        tv = tiktoken.__version__
    except ImportError:
        tv = "-"
    lines = [f"# encode_arrow benchmark ({a.encoding})", "",
             f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, numba {numba.__version__}, "
             f"pyarrow {pyarrow.__version__}, tiktoken {tv}; load average {load0[0]:.2f} at start, {load1[0]:.2f} at end; "
             f"best of {a.repeat} fresh process(es) per cell; {secs:.0f} s in all.", "",
             "| corpus | library | threads | MB/s | cpuMB/s | ratio vs tiktoken | exact |",
             "|---|---|---:|---:|---:|---:|---|"]
    ref = {(r["corpus"], r["threads"]): r for r in rows if r["lib"] == "tiktoken" and r.get("status") == "ok"}
    for r in rows:
        lines.append(_row(r, ref.get((r["corpus"], r["threads"])), "MB"))
    if short_rows:
        lines += ["", "Short strings (strings/s; ratio vs tiktoken's plain `encode_ordinary` loop):", "",
                  "| input | library | threads | strings/s | cpu strings/s | ratio vs tiktoken loop | exact |",
                  "|---|---|---:|---:|---:|---:|---|"]
        base = next((r for r in short_rows if r["lib"] == "tiktoken-loop" and r.get("status") == "ok"), None)
        for r in short_rows:
            lines.append(_row(r, base, "str"))
    lines += ["", "APIs timed: " + "; ".join(sorted({f"{r['lib']}: {r.get('api', '')}" for r in rows + short_rows
                                                     if r.get("api")}))]
    return "\n".join(lines) + "\n"


def _row(r, base, unit) -> str:
    if r.get("status") != "ok":
        return f"| {r['corpus']} | {r['lib']} | {r['threads']} | n/a: {r.get('reason', '')[:80]} | | | |"
    if unit == "MB":
        v, c = r["bytes"] / 1e6 / r["seconds"], r["bytes"] / 1e6 / max(r["cpu_seconds"], 1e-9)
        bv = base["bytes"] / 1e6 / base["seconds"] if base else None
        vs, cs = f"{v:,.1f}", f"{c:,.1f}"
    else:
        v, c = r["items"] / r["seconds"], r["items"] / max(r["cpu_seconds"], 1e-9)
        bv = base["items"] / base["seconds"] if base else None
        vs, cs = f"{v:,.0f}", f"{c:,.0f}"
    ratio = f"{v / bv:.2f}x" if bv else "-"
    return f"| {r['corpus']} | {r['lib']} | {r['threads']} | {vs} | {cs} | {ratio} | {'yes' if r['exact'] else 'NO'} |"


if __name__ == "__main__":
    sys.exit(main())
