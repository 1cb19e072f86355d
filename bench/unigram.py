"""Unigram (sentencepiece's botchan model as a T5-style tokenizer.json): our `encode_batch` /
`encode_arrow` / `encode` against HF tokenizers', on ~1.5 KB documents and on one whole text.

    python bench/unigram.py                           # english x threads 1 x every lib, best of 3
    python bench/unigram.py --corpora english,chinese --threads 1,2 --repeat 1 --out bench/results/unigram.md

The file: botchan_en_unigram_1000.model converted as HF's SpmConverter writes T5's (its charsmap as a
Precompiled normalizer, WhitespaceSplit + Metaspace, the scores, unk_id), written to a temporary
folder by each worker. Input: the corpus (bench/data.py) cut at line ends into ~1.5 KB documents
(bench_e2e._docs) as a list of str (and an Arrow string column), made outside the timer.

* ours: `tok.encode_batch(docs, num_threads=T)`; ours-arrow: `tok.encode_arrow(column, num_threads=T)`.
* hf: `tok.encode_batch(docs, add_special_tokens=False)`, RAYON_NUM_THREADS=T; hf-ids: the same and
  `[e.ids for e in encodings]` (the output ours gives).
* ours-whole / hf-whole: one `encode(text)` of the whole corpus (the first 1 MB).

Every number is ONE timed pass in a FRESH process pinned to T CPUs, after two untimed passes over
other text (bench.data.warmup_text); `--repeat N` keeps the fastest. MB/s = 10**6 bytes of UTF-8
input per wall second; cpuMB/s per CPU second (the machine may be shared). exact: the ids equal HF's.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import common  # noqa: E402

LIBS = ("ours", "ours-arrow", "hf", "hf-ids", "ours-whole", "hf-whole")
DOC_BYTES = 1500
WHOLE_BYTES = 1 << 20


def converted_botchan(folder: str) -> str:
    """botchan_en_unigram_1000.model as a T5-style tokenizer.json in `folder`; its path."""
    from bench import data
    from tltok_jit.loaders.sentencepiece_model import read_sentencepiece_model

    m = read_sentencepiece_model(str(data.tokenizers_dir() / "sentencepiece" / "botchan_en_unigram_1000.model"))
    meta = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    d = {"version": "1.0", "truncation": None, "padding": None,
         "added_tokens": [{"id": i, "content": m.pieces[i], "single_word": False, "lstrip": False, "rstrip": False,
                           "normalized": False, "special": True} for i, t in enumerate(m.types) if t in (2, 3)],
         "normalizer": {"type": "Precompiled",
                        "precompiled_charsmap": base64.b64encode(m.normalizer.precompiled_charsmap).decode()},
         "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, meta]},
         "post_processor": None, "decoder": meta,
         "model": {"type": "Unigram", "unk_id": m.types.index(2),
                   "vocab": [[p, s] for p, s in zip(m.pieces, m.scores)], "byte_fallback": False}}
    path = Path(folder) / "tokenizer.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    return str(path)


def worker(spec: dict) -> dict:
    import gc

    import numpy as np

    from bench import data
    from bench.bench_e2e import _docs as cut

    lib, threads = spec["lib"], spec["threads"]
    folder = tempfile.mkdtemp(prefix="bench-unigram-")
    path = converted_botchan(folder)
    text = data.corpus(spec["corpus"])
    whole = lib.endswith("-whole")
    if whole:
        docs = [text.encode("utf-8")[:WHOLE_BYTES].decode("utf-8", "ignore")]
        warm = [data.warmup_text()]
    else:
        docs = cut(text, DOC_BYTES)
        warm = cut(data.warmup_text(), DOC_BYTES)
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    t_load = time.perf_counter()
    docs_in, warm_in = docs, warm
    if lib.startswith("ours"):
        import tltok_jit

        tok = tltok_jit.from_file(path)
        if lib == "ours":
            def call(texts):
                return tok.encode_batch(texts, num_threads=threads)
        elif lib == "ours-whole":
            def call(texts):
                return [tok.encode(t) for t in texts]
        else:
            import pyarrow as pa

            docs_in, warm_in = pa.array(docs, pa.string()), pa.array(warm, pa.string())

            def call(col):
                return tok.encode_arrow(col, num_threads=threads)
    else:
        import tokenizers

        tok = tokenizers.Tokenizer.from_file(path)
        if lib == "hf":
            def call(texts):
                return tok.encode_batch(texts, add_special_tokens=False)
        elif lib == "hf-whole":
            def call(texts):
                return [tok.encode(t, add_special_tokens=False).ids for t in texts]
        else:
            def call(texts):
                return [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    load_s = time.perf_counter() - t_load
    for _ in range(2):
        call(warm_in)
    gc.collect()
    gc.disable()
    w0, c0 = time.perf_counter(), time.process_time()
    r = call(docs_in)
    w1, c1 = time.perf_counter(), time.process_time()
    gc.enable()
    if lib == "ours-arrow":
        rows = r.to_pylist()
    elif lib == "hf":
        rows = [e.ids for e in r]
    else:
        rows = r
    h = hashlib.sha256()
    for row in rows:
        h.update(np.asarray(row, np.int64).tobytes() + b"|")
    return {**spec, "bytes": nbytes, "docs": len(docs), "wall": w1 - w0, "cpu": c1 - c0, "load_s": load_s,
            "n_ids": sum(map(len, rows)), "sha": h.hexdigest()}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--corpora", default="english")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--out", help="write the table (markdown) there and the rows as JSON beside it")
    args = ap.parse_args(argv)
    if args.worker:
        return common.serve_worker(args.worker, worker)
    run = common.Run()
    libs = common.known_libs(args.libs, LIBS)
    if libs is None:
        return 2
    rows = common.lib_matrix(__file__, libs, args.corpora, args.threads, args.repeat, args.timeout)
    table = common.ratio_table(rows, lambda r: "hf-whole" if r["lib"].endswith("-whole") else "hf-ids", "hf")
    print(table)
    if args.out:
        head = run.header("Unigram (botchan as a T5-style tokenizer.json): encode_batch / encode_arrow / encode "
                          "against HF tokenizers", ("tokenizers", "numba", "numpy", "pyarrow"),
                          f"python bench/unigram.py {' '.join(argv)}") + [
            "- ~1.5 KB documents, one call over all of them, and one encode of the first 1 MB; every number a "
            "fresh process pinned to `thr` CPUs, warmed up on other text, the best of the repeats; x hf = HF's "
            "time for the same ids as lists (hf-ids, or hf-whole) / this lib's; exact = the ids equal HF's",
            "",
        ]
        out = Path(args.out)
        out.write_text("\n".join(head) + "\n" + table + "\n")
        out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
