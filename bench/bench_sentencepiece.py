"""Encode speed of the sentencepiece kind against the sentencepiece package, one thread, exact ids.

Each measurement runs in a fresh process that loads the model, warms up on other text (so the
kernels are compiled and the caches of both sides are warm) and then times `encode(text)` of the
whole corpus, best of `--repeat`. The ids of both sides are compared on every run.

    PYTHONPATH=. python3 bench/bench_sentencepiece.py [--repeat 3] [--model ../shared/tokenizers/sentencepiece/llama2.model]
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


def worker(side: str, model: str, corpus: str, repeat: int) -> None:
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    text = open(corpus, encoding="utf-8").read()
    if side == "ours":
        from tltok_jit import TokenizerSpec, build_tokenizer

        tok = build_tokenizer(TokenizerSpec("sentencepiece", {"model": model}))
        encode = tok.encode
    else:
        import sentencepiece as spm

        encode = spm.SentencePieceProcessor(model_file=model).encode
    encode(WARMUP)
    best = float("inf")
    ids = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        ids = encode(text)
        best = min(best, time.perf_counter() - t0)
    import hashlib

    digest = hashlib.sha256(json.dumps(ids).encode()).hexdigest()
    print(json.dumps({"seconds": best, "n_ids": len(ids), "mb": len(text.encode()) / 1e6, "digest": digest}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--model", default=os.path.join(SHARED, "tokenizers", "sentencepiece", "llama2.model"))
    ap.add_argument("--worker", nargs=3, metavar=("SIDE", "MODEL", "CORPUS"))
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker, args.repeat)
        return
    for name, fname in CORPORA.items():
        corpus = os.path.join(SHARED, "corpora", fname)
        res = {}
        for side in ("sentencepiece", "ours"):
            out = subprocess.run([sys.executable, __file__, "--repeat", str(args.repeat), "--worker", side,
                                  args.model, corpus], capture_output=True, text=True, check=True)
            res[side] = json.loads(out.stdout.strip().splitlines()[-1])
        same = res["ours"]["digest"] == res["sentencepiece"]["digest"]
        s, o = res["sentencepiece"]["seconds"], res["ours"]["seconds"]
        print(f"{name:8s} {res['ours']['mb']:.2f} MB  sentencepiece {s * 1e3:8.1f} ms ({res['ours']['mb'] / s:6.1f} MB/s)"
              f"  ours {o * 1e3:8.1f} ms ({res['ours']['mb'] / o:6.1f} MB/s)  {s / o:5.1f}x  ids equal: {same}")


if __name__ == "__main__":
    main()
