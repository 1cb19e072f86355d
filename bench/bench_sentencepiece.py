"""Encode speed of the sentencepiece kind against the sentencepiece package, exact ids.

Each measurement runs in a fresh process that loads the model, warms up on other text (so the
kernels are compiled and the caches of both sides are warm) and then times, best of `--repeat`:

  text    `encode(text)` of the whole corpus, one thread (a list of ids on both sides);
  column  the corpus cut into ~1.5 KB documents (1,500 characters of English, 500 of Chinese), on
          2 threads: ours `encode_arrow(column, num_threads=2)` of a string column built before
          the clock starts (list<uint32> out), sentencepiece's `encode(list_of_str, num_threads=2)`
          (a list of lists out).

The ids of both sides are compared on every run (sha256 of the id lists).

    PYTHONPATH=. python3 bench/bench_sentencepiece.py [--repeat 3] [--modes text,column] [--model ../shared/tokenizers/sentencepiece/llama2.model]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(os.path.dirname(HERE), "..", "shared")
CORPORA = {"english": "english-war-and-peace.txt", "chinese": "chinese-sanguo-yanyi.txt"}
WARMUP = "The quick brown fox — 敏捷的棕色狐狸 😀 jumps over the lazy dog.\n" * 50


DOC_CHARS = {"english": 1500, "chinese": 500}


def documents(text: str, corpus: str) -> list[str]:
    step = DOC_CHARS["chinese" if "chinese" in os.path.basename(corpus) else "english"]
    return [text[i:i + step] for i in range(0, len(text), step)]


def worker(side: str, mode: str, model: str, corpus: str, repeat: int) -> None:
    threads = 1 if mode == "text" else 2
    os.environ.setdefault("NUMBA_NUM_THREADS", str(threads))
    text = open(corpus, encoding="utf-8").read()
    docs = documents(text, corpus)
    if side == "ours":
        from tltok_jit import TokenizerSpec, build_tokenizer

        tok = build_tokenizer(TokenizerSpec("sentencepiece", {"model": model}))
        if mode == "text":
            encode = tok.encode
            arg = text
        else:
            import pyarrow as pa

            arg = pa.array(docs)

            def encode(column):
                return tok.encode_arrow(column, num_threads=threads)

            encode(pa.array(documents(WARMUP * 40, corpus)))
    else:
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=model)
        if mode == "text":
            encode = sp.encode
            arg = text
        else:
            arg = docs

            def encode(batch):
                return sp.encode(batch, num_threads=threads)

            encode(documents(WARMUP * 40, corpus))
    if mode == "text":
        encode(WARMUP)
    best = float("inf")
    ids = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        ids = encode(arg)
        best = min(best, time.perf_counter() - t0)
    import hashlib

    if hasattr(ids, "to_pylist"):
        ids = ids.to_pylist()
    n_ids = len(ids) if mode == "text" else sum(len(r) for r in ids)
    digest = hashlib.sha256(json.dumps(ids).encode()).hexdigest()
    print(json.dumps({"seconds": best, "n_ids": n_ids, "mb": len(text.encode()) / 1e6, "digest": digest,
                      "rows": 1 if mode == "text" else len(docs)}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--model", default=os.path.join(SHARED, "tokenizers", "sentencepiece", "llama2.model"))
    ap.add_argument("--modes", default="text,column", help="comma-separated: text (1 thread), column (2 threads)")
    ap.add_argument("--worker", nargs=4, metavar=("SIDE", "MODE", "MODEL", "CORPUS"))
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker, args.repeat)
        return
    for mode in args.modes.split(","):
        for name, fname in CORPORA.items():
            corpus = os.path.join(SHARED, "corpora", fname)
            res = {}
            for side in ("sentencepiece", "ours"):
                out = subprocess.run([sys.executable, __file__, "--repeat", str(args.repeat), "--worker", side, mode,
                                      args.model, corpus], capture_output=True, text=True, check=True)
                res[side] = json.loads(out.stdout.strip().splitlines()[-1])
            same = res["ours"]["digest"] == res["sentencepiece"]["digest"]
            s, o = res["sentencepiece"]["seconds"], res["ours"]["seconds"]
            mb = res["ours"]["mb"]
            label = "1 thread, whole text" if mode == "text" else f"2 threads, {res['ours']['rows']} documents"
            print(f"{name:8s} {label:28s} {mb:.2f} MB  sentencepiece {s * 1e3:8.1f} ms ({mb / s:6.1f} MB/s)"
                  f"  ours {o * 1e3:8.1f} ms ({mb / o:6.1f} MB/s)  {s / o:5.1f}x  ids equal: {same}", flush=True)


if __name__ == "__main__":
    main()
