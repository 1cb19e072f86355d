"""One measurement in a fresh process.  Run by bench/runner.py, never by hand.

One job: build ONE library's tokenizer, warm it up on text the timed input
does not contain, time ONE call on the target input, check the ids against
tiktoken's (outside the timer), print one JSON line.

    python bench/worker.py '{"lib": ..., "encoding": ..., "mode": ..., ...}'

Timed call: time.perf_counter() (wall) and time.process_time() (CPU of all
threads) around exactly one adapter call, with the cyclic GC disabled for its
duration (as timeit does).  The process is pinned
to `threads` CPUs (os.sched_setaffinity) before any library is imported, so
libraries that size their own pools from the CPU count obey it too.

Two optional job keys let bench/two_cores.py time two processes at once:
"cpus" (the CPUs to pin to, instead of the first `threads`) and "start_at"
(a time.time() the timed call waits for after the warm-up; the result says
"late": true when the warm-up ended after it).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def timed(call, arg):
    """(call(arg), wall seconds, CPU seconds of the process), the garbage collector off meanwhile."""
    gc.disable()
    c0 = time.process_time()
    t0 = time.perf_counter()
    result = call(arg)
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    gc.enable()
    return result, dt, cpu


def _wait_for_start(job: dict, out: dict) -> None:
    """Sleep until job["start_at"] (if given), the last ~2 ms spinning so two processes start together."""
    start_at = job.get("start_at")
    if start_at is None:
        return
    out["late"] = time.time() > start_at
    left = start_at - time.time()
    if left > 0.002:
        time.sleep(left - 0.002)
    while time.time() < start_at:
        pass


def _load_input(path: str):
    p = Path(path)
    if p.suffix == ".json":
        return json.loads(p.read_text(encoding="utf-8"))
    return p.read_text(encoding="utf-8")


def run(job: dict) -> dict:
    threads = int(job.get("threads", 1))
    try:
        cpus = job.get("cpus") or sorted(os.sched_getaffinity(0))[: max(1, threads)]
        os.sched_setaffinity(0, set(cpus))
    except (AttributeError, OSError):
        pass

    from bench import adapters

    out: dict = {"status": "ok"}
    try:
        ad = adapters.ADAPTERS[job["lib"]](job["encoding"])
    except adapters.NotAvailable as e:
        return {"status": "n/a", "reason": str(e), "stage": "load"}
    except ImportError as e:
        return {"status": "n/a", "reason": f"not installed ({e})", "stage": "load"}
    try:
        return _measure(job, ad, out, threads)
    except adapters.NotAvailable as e:
        return {"status": "n/a", "reason": str(e)}


def _measure(job: dict, ad, out: dict, threads: int) -> dict:
    import numpy as np

    from bench import adapters, data

    mode = job["mode"]  # whole | long | batch | worst | short_loop | short_batch | memory | decode_*
    out["source"] = ad.source
    if mode in DECODE_MODES:
        return _measure_decode(job, ad, out, threads)

    target = _load_input(job["input"])
    warm = data.warmup_text()
    api_key = {"worst": "whole", "short_batch": "batch"}.get(mode, mode)
    out["api"] = ad.api.get(api_key) or (ad.api.get("whole", "") + " (one thread: no split of one text)"
                                         if mode == "long" else "")

    if mode in ("whole", "worst"):
        call = lambda x: ad.whole(x)  # noqa: E731
        warm_inputs = [warm, warm[: len(warm) // 3]]
    elif mode == "long":
        call = lambda x: ad.long(x, threads)  # noqa: E731
        # past the size where a library splits one text (tltok_jit: 2**20 characters), so the
        # warm-up takes the same path as the timed call; and the warm-up text itself, for a timed
        # text below that size (the scripts corpus: ~100 KB), which takes the one-thread path
        warm_inputs = [warm * (1 + (1 << 21) // max(len(warm), 1)), warm]
    elif mode == "memory":
        call = lambda x: ad.memory(x)  # noqa: E731
        warm_inputs = [warm]
    elif mode in ("batch", "short_batch"):
        call = lambda x: ad.batch(x, threads)  # noqa: E731
        prep = getattr(ad, "prepare_batch", None)
        if mode == "batch":
            warm_inputs = [data.split_docs(warm)] * 2
        else:
            warm_inputs = [[warm[i : i + 20] for i in range(0, len(warm) - 20, 20)][:5000]] * 2
        if prep is not None:
            warm_inputs = [prep(w) for w in warm_inputs]
            target_call = prep(target)
        else:
            target_call = target
    elif mode == "short_loop":
        call = lambda x: ad.short_loop(x)  # noqa: E731
        warm_inputs = [[warm[i : i + 20] for i in range(0, len(warm) - 20, 20)][:5000]] * 2
    else:
        return {"status": "error", "reason": f"unknown mode {mode}"}
    if mode not in ("batch", "short_batch"):
        target_call = target

    t0 = time.perf_counter()
    for w in warm_inputs:
        call(w)
    out["warmup_s"] = time.perf_counter() - t0

    gc.collect()
    _wait_for_start(job, out)
    if mode == "memory":
        out["peak_reset"] = _reset_peak()
        rss0 = _status_kb("VmRSS")
        import resource

        maxrss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result, dt, cpu = timed(call, target_call)
    if mode == "memory":
        hwm = _status_kb("VmHWM")
        if out["peak_reset"] and rss0 is not None and hwm is not None:
            out["peak_delta_mb"] = (hwm - rss0) / 1024
            out["peak_method"] = "VmHWM after clear_refs=5, minus VmRSS before"
        else:
            import resource

            out["peak_delta_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - maxrss0) / 1024
            out["peak_method"] = "ru_maxrss after - before (lower bound)"
        out["rss_before_mb"] = (rss0 or 0) / 1024

    out["seconds"] = dt
    out["cpu_seconds"] = cpu  # all threads of the process
    if isinstance(target, list):
        out["n_items"] = len(target)
        out["bytes"] = sum(len(s.encode("utf-8")) for s in target)
    else:
        out["n_items"] = 1
        out["bytes"] = len(target.encode("utf-8"))

    # exactness, outside the timer
    flat, lens = adapters.to_flat(result)
    del result
    out["n_tokens"] = int(flat.size)
    oracle_path = job.get("oracle")
    if oracle_path and Path(oracle_path).is_file():
        ref = np.load(oracle_path)
        rflat, rlens = ref["flat"], ref["lens"]
        same = flat.size == rflat.size and bool(np.array_equal(flat, rflat))
        if mode in ("batch", "short_batch", "short_loop"):
            same = same and lens.size == rlens.size and bool(np.array_equal(lens, rlens))
        out["exact"] = same
        if not same:
            n = min(flat.size, rflat.size)
            diff = np.nonzero(flat[:n] != rflat[:n])[0]
            out["first_diff"] = int(diff[0]) if diff.size else n
    else:
        out["exact"] = None
    return out


DECODE_MODES = ("decode_whole", "decode_batch", "decode_loop")


def _rows(flat, lens) -> list[list[int]]:
    import numpy as np

    ends = np.cumsum(lens).tolist()
    ids = flat.astype(np.int64).tolist()
    return [ids[e - n:e] for e, n in zip(ends, lens.tolist())]


def _measure_decode(job: dict, ad, out: dict, threads: int) -> dict:
    """Time one decode call on tiktoken's ids of the input (Python lists, built outside the timer);
    exact = the decoded text equals the input text. Warmed up on the library's own ids of text the
    input does not contain, in the same shape."""
    import numpy as np

    from bench import adapters, data

    mode = job["mode"]
    out["api"] = ad.api.get(mode, "")
    target = _load_input(job["input"])
    ref = np.load(job["oracle"])
    rows = _rows(ref["flat"], ref["lens"])
    warm = data.warmup_text()
    if isinstance(target, str):
        warm_docs = [warm]
        ids = rows[0]
    else:
        warm_docs = (data.split_docs(warm) if mode != "decode_loop" or len(target[0]) > 100
                     else [warm[i:i + 20] for i in range(0, len(warm) - 20, 20)][:5000])
        ids = rows
    warm_rows = [adapters.to_flat(ad.whole(d))[0].astype(np.int64).tolist() for d in warm_docs]
    if mode == "decode_whole":
        call = ad.decode
        warm_inputs = [warm_rows[0], warm_rows[0][: len(warm_rows[0]) // 3]]
    elif mode == "decode_batch":
        call = lambda x: ad.decode_batch(x, threads)  # noqa: E731
        warm_inputs = [warm_rows] * 2
    else:
        call = ad.decode_loop
        warm_inputs = [warm_rows] * 2

    t0 = time.perf_counter()
    for w in warm_inputs:
        call(w)
    out["warmup_s"] = time.perf_counter() - t0
    gc.collect()
    result, dt, cpu = timed(call, ids)
    out["seconds"] = dt
    out["cpu_seconds"] = cpu
    out["n_items"] = 1 if isinstance(target, str) else len(target)
    out["bytes"] = len(target.encode("utf-8")) if isinstance(target, str) else sum(len(s.encode("utf-8"))
                                                                                  for s in target)
    out["n_tokens"] = int(ref["flat"].size)
    out["exact"] = result == target
    if not out["exact"]:
        got = [result] if isinstance(target, str) else list(result)
        want = [target] if isinstance(target, str) else target
        out["first_diff"] = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
    return out


def main() -> None:
    job = json.loads(sys.argv[1])
    try:
        res = run(job)
    except Exception as e:  # noqa: BLE001
        res = {"status": "error", "reason": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:]}
    sys.stdout.write("\n@@RESULT@@" + json.dumps(res) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
