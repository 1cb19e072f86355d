"""tltok_jit vs Hugging Face `tokenizers` on tokenizer.json models (Llama-3, Qwen2.5 by default).

    python bench/bench_hf.py                                  # llama3,qwen2.5 x english,chinese x whole,batch
    python bench/bench_hf.py --models llama3 --corpora english --repeat 3 --threads 1,2

Methodology (as bench/README.md): every number comes from a FRESH PROCESS that loads the
tokenizer.json, warms the instance up on OTHER text (the UDHR translations + the emoji test file,
bench.data.warmup_text; batch modes: the same text split into documents), then times ONE call on the
target input. `--repeat N` keeps the fastest of N processes. Modes:

* whole: one `encode` of the whole corpus (ours: `enc.encode_to_numpy(text, allowed_special="all")`;
  HF: `tok.encode(text, add_special_tokens=False)`); single-threaded by nature.
* batch: the corpus split into ~1-2 KB documents (bench.data.split_docs); ours:
  `enc.encode_batch_to_numpy(docs, num_threads=T, allowed_special="all")`, HF:
  `tok.encode_batch(docs, add_special_tokens=False)` with RAYON_NUM_THREADS=T.

MB/s = 10**6 bytes of UTF-8 input per wall second; cpuMB/s per CPU second of the process (the
machine may be shared: the CPU figure is the steadier one for single-thread runs). Every run checks
that our ids equal HF's ("exact").
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
    if lib == "tltok_jit":
        import tltok_jit

        enc = tltok_jit.from_file(path)
        if mode == "whole":
            def call(x):
                return enc.encode_to_numpy(x, allowed_special="all")
        else:
            def call(x):
                return enc.encode_batch_to_numpy(x, num_threads=threads, allowed_special="all")
    else:
        import tokenizers

        tok = tokenizers.Tokenizer.from_file(path)
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
    env["TOKENIZERS_PARALLELISM"] = "true" if spec["threads"] > 1 else "false"
    p = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], capture_output=True, text=True,
                       env=env, timeout=timeout, cwd=str(REPO))
    if p.returncode != 0:
        return {**spec, "error": (p.stderr or p.stdout).strip().splitlines()[-1:] or ["failed"]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--models", default="llama3,qwen2.5")
    ap.add_argument("--corpora", default="english,chinese")
    ap.add_argument("--modes", default="whole,batch")
    ap.add_argument("--threads", default="1,2", help="thread counts for batch mode")
    ap.add_argument("--libs", default="tokenizers,tltok_jit")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    rows = []
    for model in args.models.split(","):
        for corpus in args.corpora.split(","):
            for mode in args.modes.split(","):
                for threads in ([1] if mode == "whole" else [int(t) for t in args.threads.split(",")]):
                    sha = {}
                    for lib in args.libs.split(","):
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
                    if len(set(sha.values())) > 1:
                        print(f"  !! ids differ for {model}/{corpus}/{mode}/{threads}", file=sys.stderr)
                    for r in rows[-len(args.libs.split(",")):]:
                        r["exact"] = len(set(sha.values())) == 1
    print("\n| model | corpus | mode | threads | lib | MB/s | cpuMB/s | ratio vs HF | exact |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | {r['corpus']} | {r['mode']} | {r['threads']} | {r['lib']} | error: {r['error']} |")
            continue
        hf = next((x for x in rows if x.get("lib") == "tokenizers" and x["model"] == r["model"]
                   and x["corpus"] == r["corpus"] and x["mode"] == r["mode"] and x["threads"] == r["threads"]
                   and "wall" in x), None)
        mbs = r["bytes"] / r["wall"] / 1e6
        cmbs = r["bytes"] / max(r["cpu"], 1e-9) / 1e6
        ratio = f"{(hf['wall'] / r['wall']):.2f}x" if hf else "n/a"
        print(f"| {r['model']} | {r['corpus']} | {r['mode']} | {r['threads']} | {r['lib']} | {mbs:.1f} | {cmbs:.1f} "
              f"| {ratio} | {'yes' if r.get('exact') else 'NO'} |")
    return 0


def _fmt(r: dict) -> str:
    if "error" in r:
        return f"{r['lib']:10s} {r['model']}/{r['corpus']}/{r['mode']}/{r['threads']}: ERROR {r['error']}"
    return (f"{r['lib']:10s} {r['model']}/{r['corpus']}/{r['mode']}/t{r['threads']}: "
            f"{r['bytes'] / r['wall'] / 1e6:7.1f} MB/s  ({r['bytes'] / max(r['cpu'], 1e-9) / 1e6:.1f} cpuMB/s, "
            f"{r['n_ids']} ids, load {r['load_s']:.1f}s)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
