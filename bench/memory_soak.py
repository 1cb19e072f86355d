"""Memory soak: encode an endless stream of unique text in one process; RSS must stay flat after warm-up.

Every call encodes 1 MB of freshly generated random words (no word list: letters drawn at random, so
nearly every word of five letters or more is new and every piece cache keeps filling and clearing).
RSS is read from /proc/self/status (VmRSS) after every call. Each library runs in a process of its
own:

  ours      tltok_jit.get_encoding("o200k_base").encode, one text per call
  arrow     tltok_jit encode_arrow with 2 threads, the megabyte as a column of ~1 KB documents
  tiktoken  tiktoken's o200k_base (built offline from the shared rank file), encode_ordinary
  tiktoken-batch  tiktoken's encode_ordinary_batch with 2 threads on the same documents

    python bench/memory_soak.py --mb 2048                       # all four, writes bench/results/memory-soak.md
    python bench/memory_soak.py --mb 200 --libs ours --json     # one process's samples as JSON (the test)

The warm-up is the first `--warmup` megabytes (default 64): by then the caches have filled and been
cleared at least once and every kernel has run. Growth = max RSS after warm-up - RSS at its end.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, whatever else is installed
RESULTS = ROOT / "bench" / "results" / "memory-soak.md"
LIBS = ("ours", "arrow", "tiktoken", "tiktoken-batch")
MB = 1 << 20
DOC_BYTES = 1024


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


class WordStream:
    """Megabytes of random words: lowercase letters, some capitalised, some digits and punctuation."""

    def __init__(self, seed: int):
        import numpy as np

        self.np = np
        self.rng = np.random.default_rng(seed)

    def text(self, n_bytes: int) -> str:
        np = self.np
        n_words = n_bytes // 6 + 1
        lengths = self.rng.integers(1, 12, n_words)
        total = int(lengths.sum())
        letters = self.rng.integers(ord("a"), ord("z") + 1, total, dtype=np.uint8)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        caps = starts[self.rng.random(n_words) < 0.1]
        letters[caps] -= 32
        digits = self.rng.random(total) < 0.02
        letters[digits] = self.rng.integers(ord("0"), ord("9") + 1, int(digits.sum()), dtype=np.uint8)
        seps = self.rng.choice(np.frombuffer(b"          ,.\n", dtype=np.uint8), n_words)
        out = np.empty(total + n_words, dtype=np.uint8)
        pos = starts + np.arange(n_words)  # each word followed by one separator
        idx = np.repeat(pos - starts, lengths) + np.arange(total)
        out[idx] = letters
        out[pos + lengths] = seps
        return out[:n_bytes].tobytes().decode("ascii")

    def docs(self, n_bytes: int) -> list[str]:
        t = self.text(n_bytes)
        return [t[i:i + DOC_BYTES] for i in range(0, len(t), DOC_BYTES)]


def tiktoken_o200k():
    os.environ["TIKTOKEN_CACHE_DIR"] = ""
    sys.path.insert(0, str(ROOT / "tests"))
    from golden import build_tiktoken_oracle

    shared = Path(os.environ.get("TLTOK_SHARED") or (ROOT.parent / "shared"))
    return build_tiktoken_oracle("o200k_base", shared / "tokenizers" / "tiktoken" / "o200k_base.tiktoken")


def soak(lib: str, mb: int, seed: int) -> dict:
    """Encode `mb` megabytes in 1 MB calls with `lib`; RSS (MB) after each call."""
    stream = WordStream(seed)
    if lib in ("ours", "arrow"):
        import tltok_jit

        enc = tltok_jit.get_encoding("o200k_base")
        if lib == "ours":
            def call():
                return len(enc.encode(stream.text(MB)))
        else:
            import pyarrow as pa

            def call():
                return len(enc.encode_arrow(pa.array(stream.docs(MB)), num_threads=2).values)
    else:
        enc = tiktoken_o200k()
        if lib == "tiktoken":
            def call():
                return len(enc.encode_ordinary(stream.text(MB)))
        else:
            def call():
                return sum(map(len, enc.encode_ordinary_batch(stream.docs(MB), num_threads=2)))
    rss = []
    ids = 0
    t0 = time.perf_counter()
    start_rss = rss_mb()
    for _ in range(mb):
        ids += call()
        rss.append(round(rss_mb(), 1))
    return {"lib": lib, "mb": mb, "seconds": round(time.perf_counter() - t0, 1), "ids": ids,
            "rss_before": round(start_rss, 1), "rss": rss}


def stats(run: dict, warmup: int) -> dict:
    rss = run["rss"]
    w = min(warmup, len(rss)) - 1
    after = rss[w:]
    return {"warm": rss[w], "max": max(after), "last": rss[-1], "growth": round(max(after) - rss[w], 1)}


def run_in_process(lib: str, mb: int, seed: int) -> dict:
    """soak() in a fresh interpreter (RSS of one library alone)."""
    out = subprocess.run([sys.executable, __file__, "--libs", lib, "--mb", str(mb), "--seed", str(seed), "--json"],
                         check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_report(runs: list[dict], args, command: str, load: tuple[float, float]) -> None:
    lines = [
        "# Memory soak: unique text, 1 MB per call, one process per library",
        "",
        f"Date: {datetime.date.today().isoformat()}. Command: `{command}`. Load average (1 min) at start "
        f"{load[0]:.1f}, at end {load[1]:.1f} on {os.cpu_count()} cores: the seconds are not speed measurements.",
        "",
        f"Each call encodes 1 MB of newly generated random words (seed {args.seed}); RSS (VmRSS) is read after "
        f"every call. Warm-up: the first {args.warmup} MB. Growth: max RSS after warm-up minus RSS at its end. "
        "o200k_base everywhere; tiktoken built offline from the shared rank file. `arrow`: encode_arrow with "
        f"2 threads on a column of {DOC_BYTES}-byte documents; `tiktoken-batch`: encode_ordinary_batch with "
        "2 threads on the same documents.",
        "",
        "| library | MB encoded | seconds | RSS before (MB) | RSS at warm-up end | max after | last | growth |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        s = stats(r, args.warmup)
        lines.append(f"| {r['lib']} | {r['mb']} | {r['seconds']} | {r['rss_before']} | {s['warm']} | {s['max']} | "
                     f"{s['last']} | {s['growth']} |")
    lines += ["", "RSS (MB) every 10% of the run:", ""]
    for r in runs:
        step = max(1, len(r["rss"]) // 10)
        lines.append(f"- {r['lib']}: " + ", ".join(str(v) for v in r["rss"][step - 1::step]))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=2048, help="megabytes encoded per library (1 MB per call)")
    ap.add_argument("--libs", default=",".join(LIBS), help=f"comma-separated, of {', '.join(LIBS)}")
    ap.add_argument("--warmup", type=int, default=64, help="megabytes of warm-up")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="run one library here and print its samples as JSON")
    args = ap.parse_args(argv)
    libs = args.libs.split(",")
    bad = [x for x in libs if x not in LIBS]
    if bad:
        ap.error(f"unknown libraries {bad}; known: {', '.join(LIBS)}")
    if args.json:
        if len(libs) != 1:
            ap.error("--json runs one library")
        print(json.dumps(soak(libs[0], args.mb, args.seed)))
        return 0
    runs = []
    load_start = os.getloadavg()[0]
    for lib in libs:
        r = run_in_process(lib, args.mb, args.seed)
        s = stats(r, args.warmup)
        print(f"{lib}: {r['mb']} MB in {r['seconds']} s; RSS warm {s['warm']} max {s['max']} last {s['last']} "
              f"growth {s['growth']} MB", flush=True)
        runs.append(r)
    write_report(runs, args, "python bench/memory_soak.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                 (load_start, os.getloadavg()[0]))
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
