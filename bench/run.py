"""Benchmark tltok_jit against tiktoken, HF tokenizers, gigatoken, fastokens,
bpe-openai and tokie in one run, on the same inputs.  See bench/README.md.

    python bench/run.py [--quick] [--encodings r50k_base,o200k_base]
                        [--modes whole,batch,worst,short[,long,memory,decode]]
                        [--libs tiktoken,gigatoken,...] [--repeat N]
                        [--out bench/results/latest.md]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import adapters, data, prepare, report, runner  # noqa: E402

MODES = ("whole", "long", "batch", "worst", "short", "memory", "decode")


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: a 200 KB slice of english, r50k_base only, 100 KB worst cases, "
                         "10k short strings, 5 MB memory input (< ~2 min)")
    ap.add_argument("--encodings", help="comma list (default r50k_base,o200k_base; --quick: r50k_base)")
    ap.add_argument("--modes", default="whole,batch,worst,short",
                    help="comma list of whole,batch,worst,short,long,memory,decode (long: one whole corpus on "
                         "each --threads count; memory is opt-in: 100 MB inputs; decode: tiktoken's ids of each "
                         "corpus decoded whole, as documents in a batch and in a loop, and the short strings' "
                         "ids in a loop)")
    ap.add_argument("--corpora", help="comma list of english,code,chinese,scripts (default all; --quick: english)")
    ap.add_argument("--max-bytes", type=int, default=None,
                    help="cut each corpus (whole and batch modes) to a line-aligned prefix of at most this many "
                         "bytes of UTF-8 (default: the whole corpus; --quick: 200,000)")
    ap.add_argument("--libs", default=",".join(adapters.LIBRARIES), help="comma list of libraries")
    ap.add_argument("--threads", default="1,2", help="thread counts for batch modes (default 1,2)")
    ap.add_argument("--repeat", type=int, default=1, help="best of N fresh processes per measurement")
    ap.add_argument("--memory-encoding", default="o200k_base", help="encoding for the memory mode")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per worker process")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "latest.md"),
                    help="Markdown output; JSON goes beside it with .json")
    a = ap.parse_args(argv)
    a.modes = [m for m in a.modes.split(",") if m]
    bad = set(a.modes) - set(MODES)
    if bad:
        ap.error(f"unknown modes {sorted(bad)}")
    a.encodings = (a.encodings or ("r50k_base" if a.quick else "r50k_base,o200k_base")).split(",")
    a.corpora = (a.corpora or ("english" if a.quick else ",".join(data.CORPORA))).split(",")
    a.libs = [x for x in a.libs.split(",") if x]
    unknown = set(a.libs) - set(adapters.ADAPTERS)
    if unknown:
        ap.error(f"unknown libraries {sorted(unknown)}; known: {', '.join(adapters.ADAPTERS)}")
    a.threads = [int(t) for t in a.threads.split(",")]
    if a.max_bytes is not None and a.max_bytes <= 0:
        ap.error("--max-bytes must be positive")
    return a


def jobs_for(inp: prepare.Input, a: argparse.Namespace):
    """(lib, worker mode, encoding, threads) for one input, libraries interleaved."""
    if inp.mode == "memory":
        enc = a.memory_encoding
        for lib in a.libs:
            if lib in adapters.MEMORY_LIBRARIES:
                yield lib, "memory", enc, 1
        return
    whole_only = [lib for lib in a.libs if lib == "tltok_jit[numpy]"]
    plain = [lib for lib in a.libs if lib != "tltok_jit[arrow]" and lib not in whole_only]  # every mode but batch
    for enc in a.encodings:
        if inp.mode in ("whole", "worst"):
            yield from ((lib, inp.mode, enc, 1) for lib in plain + whole_only)
        elif inp.mode == "batch":
            yield from ((lib, "batch", enc, t) for t in a.threads for lib in a.libs if lib not in whole_only)
        elif inp.mode == "long":
            yield from ((lib, "long", enc, t) for t in a.threads for lib in plain)
        elif inp.mode in ("decode", "decode-short"):
            mode = "decode_whole" if inp.mode == "decode" else "decode_loop"
            yield from ((lib, mode, enc, 1) for lib in plain)
        elif inp.mode == "decode-docs":
            yield from ((lib, "decode_loop", enc, 1) for lib in plain)
            yield from ((lib, "decode_batch", enc, t) for t in a.threads for lib in plain)
        elif inp.mode == "short":
            yield from ((lib, "short_loop", enc, 1) for lib in plain)
            yield from ((lib, "short_batch", enc, t) for t in a.threads for lib in plain)


def best_of(job: dict, n: int, timeout: float) -> dict:
    runs = []
    for _ in range(max(1, n)):
        runs.append(runner.run_job(job, timeout))
        if runs[-1].get("status") != "ok":  # n/a, error or timeout: repeating cannot help
            break
    ok = [r for r in runs if r.get("status") == "ok"]
    if not ok:
        return runs[0]
    best = min(ok, key=lambda r: r["seconds"])
    exacts = [r.get("exact") for r in ok]
    best["exact"] = False if False in exacts else best.get("exact")
    best["runs"] = len(ok)
    best["cpu_seconds"] = min(r["cpu_seconds"] for r in ok)
    if "peak_delta_mb" in best:
        best["peak_delta_mb"] = min(r["peak_delta_mb"] for r in ok)
    return best


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    a = parse(argv)
    sizes = prepare.QUICK if a.quick else prepare.FULL
    if a.max_bytes is not None:
        sizes = replace(sizes, corpus_bytes=a.max_bytes)
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    print(f"preparing inputs and tiktoken oracles ({'quick' if a.quick else 'full'}) ...", file=sys.stderr)
    inputs = prepare.build_inputs(a.modes, a.corpora, sizes)
    for inp in inputs:
        encs = [a.memory_encoding] if inp.mode == "memory" else a.encodings
        for enc in encs:
            prepare.ensure_oracle(inp, enc)

    rows: list[dict] = []
    load_failed: dict[tuple[str, str], dict] = {}  # (lib, encoding) that could not even be built
    partial = Path(a.out).with_suffix(".partial.jsonl")
    partial.parent.mkdir(parents=True, exist_ok=True)
    partial.write_text("", encoding="utf-8")
    plan = [(inp, j) for inp in inputs for j in jobs_for(inp, a)]
    for k, (inp, (lib, mode, enc, thr)) in enumerate(plan, 1):
        job = {"lib": lib, "mode": mode, "encoding": enc, "threads": thr,
               "input": str(inp.path), "oracle": str(inp.oracles.get(enc, ""))}
        if (lib, enc) in load_failed:
            res = dict(load_failed[(lib, enc)])
        else:
            res = best_of(job, a.repeat, a.timeout)
            if res.get("stage") == "load":
                load_failed[(lib, enc)] = res
        row = {"mode": mode, "lib": lib, "encoding": enc, "corpus": inp.corpus, "threads": thr, **res}
        if res.get("status") == "ok":
            row["mbps"] = res["bytes"] / res["seconds"] / 1e6
            row["cpu_mbps"] = res["bytes"] / max(res["cpu_seconds"], 1e-9) / 1e6
        rows.append(row)
        with open(partial, "a", encoding="utf-8") as f:  # survives an interrupted run
            f.write(json.dumps(row, default=str) + "\n")
        shown = (f"{row['mbps']:8.2f} MB/s exact={report._exact(row)}" if res.get("status") == "ok"
                 else f"{res.get('status')}: {res.get('reason', '')}")
        print(f"[{k}/{len(plan)}] {mode:11s} {lib:16s} {enc:11s} {inp.corpus:14s} t={thr} {shown}",
              file=sys.stderr, flush=True)

    report.add_ratios(rows)
    env = report.environment()
    env["loadavg_start"] = load_start
    env["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    inputs_meta = [{**{k: v for k, v in asdict(i).items() if k not in ("path", "oracles")},
                    "file": i.path.name} for i in inputs]
    print(report.render_text(rows))
    out_md = Path(a.out)
    out_json = report.write(rows, env, inputs_meta, ["bench/run.py", *argv], out_md)
    partial.unlink(missing_ok=True)
    print(f"wrote {out_md} and {out_json} ({env['elapsed_s']} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
