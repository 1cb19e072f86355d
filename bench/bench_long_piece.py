"""One giant pretoken: 1 MB of random lowercase letters and "a" * 1,000,000, r50k_base and o200k_base.

Every library gets a FRESH instance for every timed call (built and warmed up on other text first,
outside the timer), so no cache of any kind has seen the input. Libraries are timed round-robin, next
to tiktoken, and each number is the best of --repeat rounds: on a shared machine compare the ratios
(ms / tiktoken's ms in the same round-robin), not the absolute times. Every result is checked against
tiktoken's ids. tiktoken and tltok_jit run in this process; the other libraries each in a forked child
(same machine state, one call at a time) so that a pathological case cannot hang the run: a call that
takes longer than --timeout seconds is reported as such.

    python bench/bench_long_piece.py                       # r50k_base,o200k_base; all libraries
    python bench/bench_long_piece.py --repeat 5 --libs tiktoken,tltok_jit --encodings o200k_base

Libraries: tiktoken, tltok_jit, gigatoken, bpe-openai, tokie (a missing one prints n/a and why).
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from bench import adapters, data  # noqa: E402

LIBS = ("tiktoken", "tltok_jit", "gigatoken", "bpe-openai", "tokie")
IN_PROCESS = ("tiktoken", "tltok_jit")
CASES = {
    "random-lowercase-1MB": lambda: data.worst_random_letters(1_000_000),
    "a*1M": lambda: data.worst_repeated_a(1_000_000),
}
WARMUP = "The quick brown fox jumps over the lazy dog; " * 20 + "zyxwvutsrqponmlkjihgfedcba" * 40


def fresh(lib: str, encoding: str):
    """A new, warmed-up adapter instance (its construction and warm-up are not timed)."""
    inst = adapters.ADAPTERS[lib](encoding)
    inst.whole(WARMUP)
    inst.whole(WARMUP[::-1])
    return inst


def timed(inst, text: str) -> tuple[float, np.ndarray]:
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = inst.whole(text)
        t = time.perf_counter() - t0
    finally:
        gc.enable()
    ids, _ = adapters.to_flat(out)
    return t, ids


def measure(lib: str, encoding: str, text: str, want) -> tuple[str, float, str, np.ndarray | None]:
    """("ok", seconds, "yes"/"NO"/"?" vs want, ids) or ("n/a", 0, reason, None), in this process."""
    try:
        inst = fresh(lib, encoding)
    except ImportError as e:
        return "n/a", 0.0, f"not installed ({e.name or e})", None
    except adapters.NotAvailable as e:
        return "n/a", 0.0, str(e), None
    t, ids = timed(inst, text)
    exact = "?" if want is None else ("yes" if np.array_equal(ids, want) else "NO")
    return "ok", t, exact, ids


def _child(lib, encoding, text, want, conn):
    try:
        conn.send(measure(lib, encoding, text, want)[:3])
    except BaseException as e:  # noqa: BLE001 - report anything
        conn.send(("n/a", 0.0, f"{type(e).__name__}: {e}"))
    conn.close()


def measure_isolated(lib: str, encoding: str, text: str, want, timeout: float) -> tuple[str, float, str]:
    ctx = multiprocessing.get_context("fork")
    rx, tx = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(lib, encoding, text, want, tx))
    proc.start()
    tx.close()
    if rx.poll(timeout):
        try:
            out = rx.recv()
        except EOFError:
            out = ("n/a", 0.0, f"child exited with code {proc.exitcode}")
    else:
        proc.kill()
        out = ("timeout", 0.0, f"> {timeout:.0f} s")
    proc.join()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encodings", default="r50k_base,o200k_base")
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeat", type=int, default=3, help="rounds; each number is the best round")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds for one call of a library run in a child process (build + warm-up + call)")
    args = ap.parse_args()
    libs = [x for x in args.libs.split(",") if x]
    if "tiktoken" not in libs:
        libs.insert(0, "tiktoken")
    libs.sort(key=lambda x: x != "tiktoken")
    load = os.getloadavg()
    print(f"# bench_long_piece: best of {args.repeat} rounds, fresh instance per call; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'encoding':<12} {'case':<22} {'library':<11} {'ms':>9} {'x tiktoken':>11}  exact")
    for encoding in [x for x in args.encodings.split(",") if x]:
        for case in [x for x in args.cases.split(",") if x]:
            text = CASES[case]()
            best: dict[str, float] = {}
            exact: dict[str, str] = {}
            skipped: dict[str, str] = {}
            want = None
            for _ in range(args.repeat):
                for lib in libs:
                    if lib in skipped:
                        continue
                    if lib in IN_PROCESS:
                        status, t, note, ids = measure(lib, encoding, text, want)
                        if lib == "tiktoken" and want is None:
                            want, note = ids, "yes"
                    else:
                        status, t, note = measure_isolated(lib, encoding, text, want, args.timeout)
                    if status != "ok":
                        skipped[lib] = f"{status}: {note}" if status == "timeout" else note
                        print(f"  {encoding} {case} {lib}: {skipped[lib]}", file=sys.stderr, flush=True)
                        continue
                    print(f"  {encoding} {case} {lib}: {t * 1e3:.1f} ms", file=sys.stderr, flush=True)
                    best[lib] = min(best.get(lib, float("inf")), t)
                    if exact.get(lib) in (None, "?", "yes"):
                        exact[lib] = note
            ref = best.get("tiktoken")
            for lib in libs:
                if lib not in best:
                    print(f"{encoding:<12} {case:<22} {lib:<11} {'n/a':>9} {'':>11}  {skipped.get(lib, '')}")
                    continue
                ms = best[lib] * 1e3
                ratio = best[lib] / ref if ref else float("nan")
                print(f"{encoding:<12} {case:<22} {lib:<11} {ms:9.1f} {ratio:11.3f}  {exact.get(lib, '?')}")
            sys.stdout.flush()
    load = os.getloadavg()
    print(f"# load average at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
