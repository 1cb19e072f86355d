"""Streaming encode: time to first token, peak RSS vs input size, throughput vs batch.

    python bench/bench_stream_encode.py [--what ttft,rss,throughput,held] [--encoding o200k_base]
        [--ttft-mib 64] [--rss-mib 16,128] [--tp-mib 32] [--chunk 65536] [--repeat 3]
        [--no-hf-large] [--held-encodings o200k_base] [--held-sizes 20000,40000,160000]
        [--held-chunk 64] [--held-cases ...] [--out bench/results/stream_encode.json]

Inputs: the English corpus (shared/corpora/english-war-and-peace.txt, 3.2 MB) REPEATED to the
stated size in MiB (2**20 bytes of UTF-8; the last copy is cut at a character boundary). The
methodology follows Dalirrooyfard & Ye (online tokenization), sections 1.4-1.6:

* ttft: from the first `feed` of the 64 MiB text (in --chunk pieces, from memory) to the first
  non-empty id array, in this process after a warm-up, and in a fresh process (first calls, on-disk
  numba cache warm). tiktoken has no streaming API: its first token exists when `encode_ordinary`
  of the whole text returns, so its TTFT is that full time (our batch `encode_to_numpy` too).
* rss: peak RSS (VmHWM) of a fresh process that encodes a file of 16 and 128 MiB: ours streams
  it (`feed_bytes` of --chunk reads, ids counted and dropped); tiktoken (`encode_ordinary`) and HF
  `tokenizers` (gpt2 tokenizer.json = r50k_base ids, `encode`) need the whole text and keep every
  id. Also each process's RSS after imports and loading (the baseline). HF needs ~160 MB per MiB
  of input (~20 GB at 128 MiB): a run is skipped when its estimate exceeds half of MemAvailable
  (--no-hf-large skips HF above 32 MiB always), and the output says so.
* throughput: MB/s (10**6 bytes) of `feed`/`feed_bytes` in --chunk pieces + `finish` vs
  `encode_to_numpy` of the same text (best of --repeat, interleaved); the ids are checked equal.
* held: seconds to feed HEAD + N characters of a run + "y" in --held-chunk (64) character pieces
  and finish, for N in --held-sizes, per case of HELD_CASES (best of --repeat wall and process CPU
  seconds, this process, the incremental-BPE tables built first; CPU time is the one to read on a
  shared machine); a linear encoder doubles its time when N doubles, a
  quadratic one quadruples it. The ids are checked against `encode` of the whole text.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("TLTOK_SHARED") or (ROOT.parent / "shared")).resolve()
os.environ.setdefault("TLTOK_DATA", str(SHARED / "tokenizers"))
os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
CORPUS = SHARED / "corpora" / "english-war-and-peace.txt"
CACHE = ROOT / "bench" / ".cache"
MIB = 1 << 20


def english_bytes(mib: float) -> bytes:
    base = CORPUS.read_bytes()
    n = int(mib * MIB)
    data = (base * (n // len(base) + 1))[:n]
    return data.decode("utf-8", "ignore").encode("utf-8")  # cut at a character boundary


def english_file(mib: int) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    p = CACHE / f"english_x_{mib}MiB.txt"
    if not p.exists() or p.stat().st_size < mib * MIB - 4:
        p.write_bytes(english_bytes(mib))
    return p


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def maxrss_mb() -> float:
    """Peak RSS of this process image. VmHWM, not ru_maxrss: Linux keeps ru_maxrss across fork and
    exec, so a worker started by a big parent would report the parent's peak."""
    v = _status_mb("VmHWM")
    if v != v:  # no /proc: fall back (may include the parent's peak)
        v = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return v


def current_rss_mb() -> float:
    return _status_mb("VmRSS")


def mem_available_mb() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024.0
    return float("inf")


def tiktoken_encoding(name: str):
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import TIKTOKEN_FILES, tiktoken_params  # the offline constructor of the tests
    import tiktoken
    import tiktoken.load

    params = tiktoken_params(name)
    params["mergeable_ranks"] = tiktoken.load.load_tiktoken_bpe(str(SHARED / TIKTOKEN_FILES[name]))
    return tiktoken.Encoding(**params)


# ------------------------------------------------------------------------------------ workers


def worker(args) -> None:
    """Run in a fresh process; prints one JSON line."""
    impl, name, path = args.worker, args.encoding, args.file
    res = {"impl": impl, "encoding": name, "file": path}
    t0 = time.perf_counter()
    if impl in ("ours-stream", "ours-batch", "ours-ttft"):
        import tltok_jit

        enc = tltok_jit.get_encoding(name)
        enc.encode_to_numpy("warm up the kernels' dispatch")
        if impl == "ours-stream":
            enc.stream_encoder().feed("warm")
    elif impl == "tiktoken":
        enc = tiktoken_encoding(name)
        enc.encode_ordinary("warm up")
    elif impl == "hf":
        from tokenizers import Tokenizer

        enc = Tokenizer.from_file(str(SHARED / "tokenizers" / "gpt2" / "tokenizer.json"))
        enc.encode("warm up")
    res["load_s"] = time.perf_counter() - t0
    res["rss_loaded_mb"] = current_rss_mb()
    res["maxrss_loaded_mb"] = maxrss_mb()
    n_ids = 0
    t0 = time.perf_counter()
    if impl == "ours-stream":
        se = enc.stream_encoder(disallowed_special=())
        fd = os.open(path, os.O_RDONLY)
        try:
            while True:
                data = os.read(fd, args.chunk)
                if not data:
                    break
                n_ids += len(se.feed_bytes(data))
        finally:
            os.close(fd)
        n_ids += len(se.finish())
    elif impl == "ours-ttft":
        text = Path(path).read_text(encoding="utf-8")
        se = enc.stream_encoder(disallowed_special=())
        t0 = time.perf_counter()
        for i in range(0, len(text), args.chunk):
            got = se.feed(text[i:i + args.chunk])
            if len(got):
                res["ttft_s"] = time.perf_counter() - t0
                break
    else:
        text = Path(path).read_text(encoding="utf-8")
        if impl == "ours-batch":
            n_ids = len(enc.encode_to_numpy(text, disallowed_special=()))
        elif impl == "tiktoken":
            n_ids = len(enc.encode_ordinary(text))
        elif impl == "hf":
            n_ids = len(enc.encode(text).ids)
    res["encode_s"] = time.perf_counter() - t0
    res["n_ids"] = n_ids
    res["maxrss_mb"] = maxrss_mb()
    print(json.dumps(res))


def run_worker(impl: str, name: str, path: Path, chunk: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", impl, "--encoding", name, "--file", str(path), "--chunk",
           str(chunk)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"impl": impl, "encoding": name, "error": r.stderr.strip().splitlines()[-1:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------ benches


def bench_ttft(name: str, mib: int, chunk: int, repeat: int) -> dict:
    import tltok_jit

    enc = tltok_jit.get_encoding(name)
    path = english_file(mib)
    text = path.read_text(encoding="utf-8")
    se = enc.stream_encoder(disallowed_special=())
    se.feed(text[:100000])
    se.finish()
    ours = []
    for _ in range(repeat):
        se = enc.stream_encoder(disallowed_special=())
        t0 = time.perf_counter()
        for i in range(0, len(text), chunk):
            got = se.feed(text[i:i + chunk])
            if len(got):
                ours.append(time.perf_counter() - t0)
                break
    fresh = run_worker("ours-ttft", name, path, chunk)
    t0 = time.perf_counter()
    ref = enc.encode_to_numpy(text, disallowed_special=())
    ours_batch = time.perf_counter() - t0
    n_ids = len(ref)
    del ref
    tk = tiktoken_encoding(name)
    tk.encode_ordinary("warm")
    t0 = time.perf_counter()
    n_tk = len(tk.encode_ordinary(text))
    tk_full = time.perf_counter() - t0
    out = {
        "encoding": name, "input": f"English corpus repeated to {mib} MiB", "chunk_bytes": chunk,
        "ours_stream_ttft_s": min(ours), "ours_stream_ttft_fresh_process_s": fresh.get("ttft_s"),
        "ours_batch_full_s": ours_batch, "tiktoken_full_encode_s": tk_full, "n_ids": n_ids,
        "tiktoken_n_ids": n_tk,
    }
    out["speedup_vs_tiktoken"] = tk_full / out["ours_stream_ttft_s"]
    return out


def bench_rss(sizes: list[int], chunk: int, hf_large: bool) -> list[dict]:
    rows = []
    tiny = CACHE / "tiny.txt"
    tiny.write_bytes(english_bytes(0.05))
    for impl, name in [("ours-stream", "r50k_base"), ("ours-stream", "o200k_base"), ("ours-batch", "r50k_base")]:
        run_worker(impl, name, tiny, chunk)  # populate the on-disk numba cache: no compiling below
    for mib in sizes:
        path = english_file(mib)
        plan = [("ours-stream", "r50k_base"), ("ours-stream", "o200k_base"), ("ours-batch", "r50k_base"),
                ("tiktoken", "r50k_base"), ("hf", "r50k_base")]
        for impl, name in plan:
            # measured peaks: tiktoken ~12 MB and HF ~160 MB per MiB of input (HF at 128 MiB: ~20 GB)
            need = {"ours-stream": 400, "ours-batch": 400 + 4 * mib, "tiktoken": 300 + 13 * mib,
                    "hf": 300 + 170 * mib}[impl]
            if impl == "hf" and mib > 32 and not hf_large:
                rows.append({"impl": impl, "encoding": name, "mib": mib, "skipped": "--no-hf-large"})
                continue
            avail = mem_available_mb()
            if need > 0.5 * avail:  # a shared machine: leave room for the others
                rows.append({"impl": impl, "encoding": name, "mib": mib,
                             "skipped": f"needs ~{need} MB, MemAvailable {avail:.0f} MB"})
                continue
            r = run_worker(impl, name, path, chunk)
            r["mib"] = mib
            rows.append(r)
            print("#", json.dumps(r), flush=True)
    return rows


def bench_throughput(names: list[str], mib: int, chunk: int, repeat: int) -> list[dict]:
    import tltok_jit

    text = english_bytes(mib).decode("utf-8")
    data = text.encode("utf-8")
    rows = []
    for name in names:
        enc = tltok_jit.get_encoding(name)
        ref = enc.encode_to_numpy(text[:200000], disallowed_special=())
        se = enc.stream_encoder(disallowed_special=())
        se.feed(text[:200000])
        se.finish()
        best = {"batch": 1e9, "feed": 1e9, "feed_bytes": 1e9}
        for _ in range(repeat):
            t0 = time.perf_counter()
            ref = enc.encode_to_numpy(text, disallowed_special=())
            best["batch"] = min(best["batch"], time.perf_counter() - t0)
            se = enc.stream_encoder(disallowed_special=())
            t0 = time.perf_counter()
            parts = [se.feed(text[i:i + chunk]) for i in range(0, len(text), chunk)]
            parts.append(se.finish())
            best["feed"] = min(best["feed"], time.perf_counter() - t0)
            got = np.concatenate(parts)
            assert np.array_equal(got, ref), name
            se = enc.stream_encoder(disallowed_special=())
            t0 = time.perf_counter()
            parts = [se.feed_bytes(data[i:i + chunk]) for i in range(0, len(data), chunk)]
            parts.append(se.finish())
            best["feed_bytes"] = min(best["feed_bytes"], time.perf_counter() - t0)
            assert np.array_equal(np.concatenate(parts), ref), name
            del parts, got
        mb = len(data) / 1e6
        row = {"encoding": name, "input": f"English corpus repeated to {mib} MiB", "chunk_bytes": chunk,
               "batch_MBps": mb / best["batch"], "stream_feed_MBps": mb / best["feed"],
               "stream_feed_bytes_MBps": mb / best["feed_bytes"]}
        row["feed_vs_batch"] = row["stream_feed_MBps"] / row["batch_MBps"]
        row["feed_bytes_vs_batch"] = row["stream_feed_bytes_MBps"] / row["batch_MBps"]
        rows.append(row)
        print("#", json.dumps(row), flush=True)
    return rows


# (head, unit): held text = head + unit repeated to N characters + "y"
HELD_CASES = {
    "newline_then_spaces": ("x\n", " "),  # ids wait for the run's end (another CR/LF or not)
    "punct_newline_then_spaces": ("x!\n", " "),
    "newlines_then_spaces": ("x" + "\n \n" * 200, " "),
    "modifier_then_capitals": ("x \u02b0", "ABC"),  # o200k: waits for a lowercase letter
    "spaces": ("x", " "),
    "letters": ("", "abcdefghij"),
    "digits": ("", "0123456789"),
    "punctuation": ("", "!?=-+*&^%$#@"),
    "cjk": ("", "\u4e2d\u6587\u5b57\u8bcd\u8bed\u8a00"),
    "newline_space_mix": ("x", "\n \n  \n"),
    "marks_after_letter": ("a", "\u0301"),
}


def bench_held(names: list[str], sizes: list[int], chunk: int, repeat: int, cases: list[str]) -> list[dict]:
    import tltok_jit

    rows = []
    for name in names:
        enc = tltok_jit.get_encoding(name)
        se = enc.stream_encoder()
        se.feed("a" * 3000)  # builds the incremental-BPE tables (not timed)
        se.finish()
        for case in cases:
            head, unit = HELD_CASES[case]
            for n in sizes:
                body = (unit * (n // len(unit) + 1))[:n]
                best, best_cpu, exact = float("inf"), float("inf"), None
                for _ in range(repeat):
                    se = enc.stream_encoder()
                    t0, c0 = time.perf_counter(), time.process_time()
                    parts = [se.feed(head)] + [se.feed(body[i:i + chunk]) for i in range(0, n, chunk)]
                    parts += [se.feed("y"), se.finish()]
                    best = min(best, time.perf_counter() - t0)
                    best_cpu = min(best_cpu, time.process_time() - c0)
                    if exact is None:
                        exact = np.concatenate(parts).tolist() == enc.encode(head + body + "y")
                row = {"encoding": name, "case": case, "n_chars": n, "chunk_chars": chunk, "seconds": best,
                       "cpu_seconds": best_cpu, "cpu_us_per_char": 1e6 * best_cpu / n, "exact": exact}
                rows.append(row)
                print("#", json.dumps(row), flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--what", default="ttft,rss,throughput")
    p.add_argument("--encoding", default="o200k_base", help="TTFT encoding")
    p.add_argument("--tp-encodings", default="r50k_base,cl100k_base,o200k_base")
    p.add_argument("--ttft-mib", type=int, default=64)
    p.add_argument("--rss-mib", default="16,128")
    p.add_argument("--tp-mib", type=int, default=32)
    p.add_argument("--chunk", type=int, default=1 << 16)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-hf-large", action="store_true")
    p.add_argument("--held-encodings", default="o200k_base")
    p.add_argument("--held-sizes", default="20000,40000,160000")
    p.add_argument("--held-chunk", type=int, default=64)
    p.add_argument("--held-cases", default=",".join(HELD_CASES))
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "stream_encode.json"))
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--file", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    what = set(args.what.split(","))
    result = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "platform": platform.platform()},
              "note": "inputs: English corpus repeated; MiB = 2**20 bytes; MB/s = 10**6 bytes/s; shared "
                      "2-core machine, timings noisy"}
    if "ttft" in what:
        result["ttft"] = bench_ttft(args.encoding, args.ttft_mib, args.chunk, args.repeat)
        print("#", json.dumps(result["ttft"]), flush=True)
    if "rss" in what:
        result["rss"] = bench_rss([int(x) for x in args.rss_mib.split(",")], args.chunk, not args.no_hf_large)
    if "throughput" in what:
        result["throughput"] = bench_throughput(args.tp_encodings.split(","), args.tp_mib, args.chunk, args.repeat)
    if "held" in what:
        result["held"] = bench_held(args.held_encodings.split(","), [int(x) for x in args.held_sizes.split(",")],
                                    args.held_chunk, args.repeat, args.held_cases.split(","))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
