"""tltok_jit vs Hugging Face `tokenizers` (and fastokens / tokie / kitoken when installed, and HF's
1.0 pre-release from another interpreter) on tokenizer.json models.

    python bench/bench_hf.py                                  # llama3,qwen2.5 x english,code,chinese x whole,batch
    python bench/bench_hf.py --models llama3 --corpora english --repeat 3 --threads 1,2
    python bench/bench_hf.py --out bench/results/hf.md         # also writes hf.json beside it
    python bench/bench_hf.py --rc3-python /tmp/rc3venv/bin/python   # adds lib hf-rc3

`hf-rc3`: `tokenizers==1.0.0rc3` conflicts with the 0.23 installed here, so it lives in its own venv
(`python -m venv /tmp/rc3venv && /tmp/rc3venv/bin/pip install tokenizers==1.0.0rc3 numpy`); its
workers run with that interpreter (--rc3-python, or BENCH_HF_RC3_PYTHON), the same calls as HF's.

Methodology (as bench/README.md): every number comes from a FRESH PROCESS, pinned to `threads` CPUs
before any library is imported, that loads the tokenizer.json, warms the instance up on OTHER text
(the UDHR translations + the emoji test file, bench.data.warmup_text; batch modes: the same text
split into documents), then times ONE call on the target input. `--repeat N` keeps the fastest of N
processes. Modes:

* whole: one encode of the whole corpus, single-threaded (ours: `enc.encode_to_numpy(text,
  allowed_special="all")`; HF: `tok.encode(text, add_special_tokens=False)`; fastokens / tokie: the
  same call on their Tokenizer, with FASTOKENS_BPE_THREADS=1; kitoken: `Kitoken.from_file(path)
  .encode(text, True)`, True: added tokens in the text match, as HF's do).
* batch: the corpus split into ~1-2 KB documents (bench.data.split_docs); ours:
  `enc.encode_batch_to_numpy(docs, num_threads=T, allowed_special="all")`, HF:
  `tok.encode_batch(docs, add_special_tokens=False)` with RAYON_NUM_THREADS=T; fastokens / tokie:
  `encode_batch_flat(docs, add_special_tokens=False)`; kitoken: `encode_all(docs, True)`.

MB/s = 10**6 bytes of UTF-8 input per wall second; cpuMB/s per CPU second of the process (the
machine may be shared: the CPU figure and ratio(cpu) are the steadier ones for single-thread runs).
Every run's ids are compared with HF's (column exact).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _inputs(corpus: str, mode: str):
    from bench import data

    text = data.corpus(corpus)
    if mode == "whole":
        return text, len(text.encode("utf-8"))
    docs = data.split_docs(text)
    return docs, sum(len(d.encode("utf-8")) for d in docs)


def worker(spec: dict) -> dict:
    import gc

    import numpy as np

    from bench import data

    lib, model, corpus, mode, threads = spec["lib"], spec["model"], spec["corpus"], spec["mode"], spec["threads"]
    path = str(data.tokenizers_dir() / model / "tokenizer.json")
    target, nbytes = _inputs(corpus, mode)
    warm = data.warmup_text()
    warm_docs = data.split_docs(warm, 512)
    t_load = time.perf_counter()
    if lib in ("fastokens", "tokie"):
        if lib == "fastokens":
            import fastokens

            tok = fastokens.Tokenizer.from_file(path)
        else:
            import tokie

            tok = tokie.Tokenizer.from_json(path)
        if mode == "whole":
            def call(x):
                return tok.encode(x, add_special_tokens=False)
        else:
            def call(x):
                return tok.encode_batch_flat(x, add_special_tokens=False)
    elif lib == "kitoken":
        import kitoken

        tok = kitoken.Kitoken.from_file(path)
        if mode == "whole":
            def call(x):
                return tok.encode(x, True)
        else:
            def call(x):
                return tok.encode_all(x, True)
    elif lib == "tltok_jit":
        import tltok_jit

        enc = tltok_jit.from_file(path)
        if mode == "whole":
            def call(x):
                return enc.encode_to_numpy(x, allowed_special="all")
        else:
            def call(x):
                return enc.encode_batch_to_numpy(x, num_threads=threads, allowed_special="all")
    else:  # "tokenizers", or "hf-rc3": the same package in the interpreter of --rc3-python
        import tokenizers

        tok = tokenizers.Tokenizer.from_file(path)
        spec = {**spec, "version": tokenizers.__version__}
        if mode == "whole":
            def call(x):
                return tok.encode(x, add_special_tokens=False)
        else:
            def call(x):
                return tok.encode_batch(x, add_special_tokens=False)
    load_s = time.perf_counter() - t_load
    for _ in range(2):
        call(warm if mode == "whole" else warm_docs)
    gc.collect()
    gc.disable()
    w0, c0 = time.perf_counter(), time.process_time()
    res = call(target)
    w1, c1 = time.perf_counter(), time.process_time()
    gc.enable()
    # ids, for the exactness check (outside the timing)
    if lib == "tltok_jit":
        ids = res if mode == "whole" else res[0]
    elif lib in ("fastokens", "tokie"):
        ids = res.ids if mode == "whole" else (np.frombuffer(res[0], dtype=np.uint32) if lib == "fastokens"
                                               else res[0])
    elif lib == "kitoken":
        ids = np.array(res if mode == "whole" else [i for e in res for i in e], dtype=np.uint32)
    else:
        ids = np.array(res.ids if mode == "whole" else [i for e in res for i in e.ids], dtype=np.uint32)
    ids = np.asarray(ids, dtype=np.uint32)
    import hashlib

    return {**spec, "bytes": nbytes, "wall": w1 - w0, "cpu": c1 - c0, "load_s": load_s, "n_ids": int(len(ids)),
            "ids_sha": hashlib.sha256(ids.tobytes()).hexdigest()}


def run_one(spec: dict, timeout: float) -> dict:
    env = dict(os.environ)
    env["RAYON_NUM_THREADS"] = str(spec["threads"])
    env["NUMBA_NUM_THREADS"] = str(max(spec["threads"], 1))
    env["FASTOKENS_BPE_THREADS"] = str(spec["threads"])
    env.pop("FASTOKENS_INPUT_CACHE", None)
    env.pop("FASTOKENS_SEGMENT_CACHE", None)
    env["TOKENIZERS_PARALLELISM"] = "true" if spec["threads"] > 1 else "false"
    # time the kernels, never the Python encoder that answers while they compile (as bench/runner.py)
    env["TLTOK_COMPILE"] = "foreground"
    python = RC3_PYTHON["path"] if spec["lib"] == "hf-rc3" else sys.executable
    p = subprocess.run([python, __file__, "--worker", json.dumps(spec)], capture_output=True, text=True,
                       env=env, timeout=timeout, cwd=str(REPO))
    if p.returncode != 0:
        return {**spec, "error": (p.stderr or p.stdout).strip().splitlines()[-1:] or ["failed"]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--models", default="llama3,qwen2.5")
    ap.add_argument("--corpora", default="english,code,chinese")
    ap.add_argument("--modes", default="whole,batch")
    ap.add_argument("--threads", default="1,2", help="thread counts for batch mode")
    ap.add_argument("--libs", default="tokenizers,tltok_jit,fastokens,tokie,kitoken,hf-rc3")
    ap.add_argument("--rc3-python", default=os.environ.get("BENCH_HF_RC3_PYTHON", ""), metavar="PYTHON",
                    help="interpreter whose `tokenizers` is 1.0.0rc3 (lib hf-rc3; left out without it)")
    ap.add_argument("--out", help="write the table (markdown) there and the rows as JSON beside it")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        try:  # pin to `threads` CPUs before any library sizes a pool from the CPU count
            os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:max(int(spec["threads"]), 1)])
        except (AttributeError, OSError):
            pass
        print(json.dumps(worker(spec)))
        return 0
    load0 = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    RC3_PYTHON["path"] = args.rc3_python
    libs = [x for x in args.libs.split(",") if _installed(x)]
    if "tokenizers" in libs:  # the oracle first: the others are checked against its ids
        libs.remove("tokenizers")
        libs.insert(0, "tokenizers")
    rows = []
    for model in args.models.split(","):
        for corpus in args.corpora.split(","):
            for mode in args.modes.split(","):
                for threads in ([1] if mode == "whole" else [int(t) for t in args.threads.split(",")]):
                    sha = {}
                    for lib in libs:
                        spec = {"lib": lib, "model": model, "corpus": corpus, "mode": mode, "threads": threads}
                        best = None
                        for _ in range(args.repeat):
                            r = run_one(spec, args.timeout)
                            if "error" in r:
                                best = r
                                break
                            if best is None or r["wall"] < best["wall"]:
                                best = r
                        rows.append(best)
                        if "error" not in best:
                            sha[lib] = best["ids_sha"]
                        print(_fmt(best), file=sys.stderr, flush=True)
                    for r in rows[-len(libs):]:
                        if "error" not in r:
                            r["exact"] = "tokenizers" in sha and r["ids_sha"] == sha["tokenizers"]
                            if not r["exact"]:
                                print(f"  !! {r['lib']} ids differ from HF for {model}/{corpus}/{mode}/{threads}",
                                      file=sys.stderr)
    table = _table(rows)
    print(table)
    if args.out:
        import platform

        import importlib.metadata as md

        versions = {}
        for dist in ("tokenizers", "fastokens", "tokie", "kitoken", "numba", "numpy"):
            try:
                versions[dist] = md.version(dist)
            except md.PackageNotFoundError:
                pass
        if "hf-rc3" in libs:
            versions["hf-rc3"] = _rc3_version()
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=str(REPO)).stdout.strip()
        head = [
            "# tltok_jit vs Hugging Face tokenizers on tokenizer.json files",
            "",
            f"- date: {started}; commit {commit}; Python {platform.python_version()}; "
            f"{os.cpu_count()} CPUs; versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()),
            f"- load average (1/5/15 min) at start {tuple(round(x, 2) for x in load0)}, at end "
            f"{tuple(round(x, 2) for x in os.getloadavg())} (a shared machine: ratio(cpu) is the steadier figure)",
            f"- command: `python bench/bench_hf.py {' '.join(argv)}`",
            "- every number: a fresh process per measurement pinned to `thr` CPUs, warmed up on UDHR+emoji text, "
            "ONE timed call on unseen text (best of the repeats); exact = ids equal HF tokenizers' ids",
            "",
        ]
        out = Path(args.out)
        out.write_text("\n".join(head) + table + "\n", encoding="utf-8")
        out.with_suffix(".json").write_text(json.dumps({"date": started, "commit": commit, "versions": versions,
                                                        "argv": argv, "rows": rows}, indent=1), encoding="utf-8")
    return 0


RC3_PYTHON = {"path": ""}  # the interpreter of lib hf-rc3 (--rc3-python)


def _rc3_version() -> str:
    """`tokenizers.__version__` in the --rc3-python interpreter ("" when it cannot import it)."""
    if not RC3_PYTHON["path"]:
        return ""
    try:
        p = subprocess.run([RC3_PYTHON["path"], "-c", "import tokenizers; print(tokenizers.__version__)"],
                           capture_output=True, text=True, timeout=120)
    except OSError:
        return ""
    return p.stdout.strip() if p.returncode == 0 else ""


def _installed(lib: str) -> bool:
    import importlib.util

    if lib == "hf-rc3":
        return bool(_rc3_version())
    return importlib.util.find_spec("tltok_jit" if lib == "tltok_jit" else lib) is not None


def _table(rows: list[dict]) -> str:
    lines = ["", "| model | corpus | mode | thr | lib | MB/s | cpuMB/s | ratio vs HF | ratio(cpu) vs HF | exact |",
             "|---|---|---|---:|---|---:|---:|---:|---:|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['corpus']} | {r['mode']} | {r['threads']} | {r['lib']} | "
                         f"error: {r['error']} | | | | |")
            continue
        hf = next((x for x in rows if x.get("lib") == "tokenizers" and x["model"] == r["model"]
                   and x["corpus"] == r["corpus"] and x["mode"] == r["mode"] and x["threads"] == r["threads"]
                   and "wall" in x), None)
        mbs = r["bytes"] / r["wall"] / 1e6
        cmbs = r["bytes"] / max(r["cpu"], 1e-9) / 1e6
        ratio = f"{(hf['wall'] / r['wall']):.1f}x" if hf else "n/a"
        cratio = f"{(hf['cpu'] / max(r['cpu'], 1e-9)):.1f}x" if hf else "n/a"
        lines.append(f"| {r['model']} | {r['corpus']} | {r['mode']} | {r['threads']} | {r['lib']} | {mbs:.1f} | "
                     f"{cmbs:.1f} | {ratio} | {cratio} | {'yes' if r.get('exact') else 'NO'} |")
    return "\n".join(lines)


def _fmt(r: dict) -> str:
    if "error" in r:
        return f"{r['lib']:10s} {r['model']}/{r['corpus']}/{r['mode']}/{r['threads']}: ERROR {r['error']}"
    return (f"{r['lib']:10s} {r['model']}/{r['corpus']}/{r['mode']}/t{r['threads']}: "
            f"{r['bytes'] / r['wall'] / 1e6:7.1f} MB/s  ({r['bytes'] / max(r['cpu'], 1e-9) / 1e6:.1f} cpuMB/s, "
            f"{r['n_ids']} ids, load {r['load_s']:.1f}s)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
