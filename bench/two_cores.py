"""What two cores can give one job on this machine: the job's two halves alone, the two halves at once
in two processes (one per core: they share the machine's caches and memory bandwidth, no work), and
the library's own call on two threads. A fresh process per number (bench/worker.py: warmed up on
other text, one timed call, ids checked against tiktoken's).

    python bench/two_cores.py [--encodings o200k_base,r50k_base] [--corpora english,code,chinese]
                              [--libs tltok_jit,fastokens] [--mode long|batch] [--repeat 3] [--out F.md]

--mode long: one whole text (the long-text row of bench/run.py); batch: the ~1.5 KB documents of
the two-thread table (ours through `tltok_jit[arrow]`, as there). The text is halved at a line (where
our split cuts it), the documents alternately.

"Ceiling" is the job on one thread over the slower half when both run at once: the most any split
into two equal shares can give here, since each share costs at least what it cost in a process of
its own next to the other one (a split that shares a piece cache does less work than two halves, so
it may pass it by that much). Times: the lowest of --repeat processes, and their median (two busy
cores of a VM may slow each other in some runs and not in others).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import data, oracle, prepare, runner  # noqa: E402

MODES = ("long", "batch")
TIMEOUT = 600.0


def halves(text: str) -> tuple[str, str]:
    """The text cut at the first line end past its middle character."""
    cut = text.find("\n", len(text) // 2) + 1 or len(text)
    return text[:cut], text[cut:]


def doc_halves(docs: list[str]) -> tuple[list[str], list[str]]:
    """Every other document: the two halves hold the same mix (cut in the middle, the scripts
    corpus's first half, Devanagari and Gujarati, took twice the time of its second)."""
    return docs[0::2], docs[1::2]


def inputs(mode: str, corpus: str, encoding: str) -> dict[str, prepare.Input]:
    """whole, a, b: written once under bench/.cache with tiktoken's ids."""
    text = data.corpus(corpus)
    if mode == "long":
        a, b = halves(text)
        objs = {"whole": text, "a": a, "b": b}
    else:
        docs = data.split_docs(text)
        a, b = doc_halves(docs)
        objs = {"whole": docs, "a": a, "b": b}
    out = {}
    for part, obj in objs.items():
        inp = prepare.write_input(mode, f"{corpus}-{part}", obj)
        prepare.ensure_oracle(inp, encoding)
        out[part] = inp
    return out


def _job(lib: str, encoding: str, mode: str, inp: prepare.Input, threads: int, cpus: list[int],
         start_at: float | None = None) -> dict:
    job = {"lib": lib, "encoding": encoding, "mode": mode, "input": str(inp.path), "threads": threads,
           "oracle": str(inp.oracles[encoding]), "cpus": cpus}
    if start_at is not None:
        job["start_at"] = start_at
    return job


def _ok(res: dict, what: str) -> dict:
    if res.get("status") != "ok":
        raise RuntimeError(f"{what}: {res.get('status')}: {res.get('reason')}")
    if res.get("exact") is False:
        raise RuntimeError(f"{what}: ids differ from tiktoken's at {res.get('first_diff')}")
    return res


def run_alone(lib, encoding, mode, inp, threads=1) -> dict:
    cpus = list(range(threads))
    return _ok(runner.run_job(_job(lib, encoding, mode, inp, threads, cpus), TIMEOUT), f"{lib} {inp.path.name}")


def run_together(lib, encoding, mode, a, b, lead: float) -> tuple[dict, dict]:
    """Half a on CPU 0 and half b on CPU 1, their timed calls started at the same moment, `lead`
    seconds after the processes start (doubled until both were warmed up by then)."""
    while True:
        start_at = time.time() + lead
        res: dict[str, dict] = {}
        jobs = {"a": _job(lib, encoding, mode, a, 1, [0], start_at), "b": _job(lib, encoding, mode, b, 1, [1], start_at)}
        ts = [threading.Thread(target=lambda k=k: res.__setitem__(k, runner.run_job(jobs[k], TIMEOUT))) for k in jobs]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        ra, rb = _ok(res["a"], f"{lib} {a.path.name} (at once)"), _ok(res["b"], f"{lib} {b.path.name} (at once)")
        if not (ra.get("late") or rb.get("late")):
            return ra, rb
        if lead > TIMEOUT:
            raise RuntimeError(f"{lib}: the two processes never started their timed calls together")
        lead *= 2


def measure(lib: str, encoding: str, mode: str, corpus: str, repeat: int) -> dict:
    inp = inputs(mode, corpus, encoding)
    rows = {k: [] for k in ("whole1", "a", "b", "ta", "tb", "whole2")}
    for _ in range(repeat):
        rows["whole1"].append(run_alone(lib, encoding, mode, inp["whole"]))
        ra = run_alone(lib, encoding, mode, inp["a"])
        rb = run_alone(lib, encoding, mode, inp["b"])
        rows["a"].append(ra)
        rows["b"].append(rb)
        lead = 1.0 + max(ra["process_s"], rb["process_s"])
        ta, tb = run_together(lib, encoding, mode, inp["a"], inp["b"], lead)
        rows["ta"].append(ta)
        rows["tb"].append(tb)
        rows["whole2"].append(run_alone(lib, encoding, mode, inp["whole"], threads=2))
    ms = {k: min(r["seconds"] for r in v) * 1e3 for k, v in rows.items()}
    pairs = [max(a["seconds"], b["seconds"]) * 1e3 for a, b in zip(rows["ta"], rows["tb"])]
    ms["together"] = min(pairs)
    for k in ("whole1", "whole2"):
        ms[k + "_median"] = statistics.median(r["seconds"] for r in rows[k]) * 1e3
    ms["together_median"] = statistics.median(pairs)
    ms["bytes"] = inp["whole"].bytes
    return ms


def table(results: list[tuple[str, str, str, dict]]) -> list[str]:
    """Lowest times, then medians in brackets (ms)."""
    out = ["| encoding | corpus | library | one thread | halves alone (a / b) | halves at once (a / b; "
           "the slower) | ceiling | two threads | two / one thread |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for enc, corpus, lib, m in results:
        out.append(
            f"| {enc} | {corpus} | {lib} | {m['whole1']:.2f} [{m['whole1_median']:.2f}] | "
            f"{m['a']:.2f} / {m['b']:.2f} | {m['ta']:.2f} / {m['tb']:.2f}; {m['together']:.2f} "
            f"[{m['together_median']:.2f}] | {m['whole1'] / m['together']:.2f}x "
            f"[{m['whole1_median'] / m['together_median']:.2f}x] | {m['whole2']:.2f} [{m['whole2_median']:.2f}] | "
            f"{m['whole1'] / m['whole2']:.2f}x [{m['whole1_median'] / m['whole2_median']:.2f}x] |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encodings", default="o200k_base,r50k_base")
    ap.add_argument("--corpora", default="english,code,chinese")
    ap.add_argument("--libs", default=None, help="default: tltok_jit (long) or tltok_jit[arrow] (batch)")
    ap.add_argument("--mode", choices=MODES, default="long")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    libs = (a.libs or ("tltok_jit" if a.mode == "long" else "tltok_jit[arrow]")).split(",")
    for e in a.encodings.split(","):
        if e not in oracle.ENCODINGS:
            ap.error(f"--encodings: no encoding {e!r} (choose from {', '.join(oracle.ENCODINGS)})")
    for c in a.corpora.split(","):
        if c not in data.CORPORA:
            ap.error(f"--corpora: no corpus {c!r} (choose from {', '.join(data.CORPORA)})")
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    results = []
    for enc in a.encodings.split(","):
        for corpus in a.corpora.split(","):
            for lib in libs:
                m = measure(lib, enc, a.mode, corpus, a.repeat)
                results.append((enc, corpus, lib, m))
                print(table([results[-1]])[-1], flush=True)
    cmd = "python bench/two_cores.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [f"`{cmd}`", "", f"mode {a.mode}; ms, the lowest of {a.repeat} fresh processes and [their median]; "
             "the ceiling is the one-thread time over the slower half at once (lowest over lowest, median "
             "over median); ids exact against tiktoken in every process", ""] + table(results)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
