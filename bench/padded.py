"""Fixed-shape batches: `Encoding.encode_batch_padded` against `encode_arrow` (the same column, ragged
list<uint32> out) and against HF tokenizers' padded `encode_batch`, on Llama-3's tokenizer.json.

    python -m bench padded                                  # english,code x whole column,256 rows x 2 threads
    python -m bench padded --corpora english --batch-rows 0 --repeat 1
    python -m bench padded --out bench/results/padded.md    # also writes padded.json beside it

Input: each corpus (bench/data.py: english = War and Peace 3.2 MB, code = CPython stdlib .py files
>= 3 MB, chinese = 三国演义 1.8 MB) cut at line ends into ~1.5 KB documents (bench_e2e._docs, as the
end-to-end input is made), as an Arrow string column (ours) and a list of str (HF), both made
outside the timer. `--batch-rows 0` is one call over the whole column; N is one call per N rows
(the column sliced zero-copy, the list sliced), all timed together, each result dropped before the
next call as a training loop drops a batch it has handed on.

Calls (the same settings everywhere): truncation to max_length=512, padding to the longest row of
the call, pad_id = <|end_of_text|>, added tokens matched in text.

* padded: `enc.encode_batch_padded(column, max_length=512, truncation=True, pad_id=..., num_threads=T,
  allowed_special="all")`: int64 input_ids / attention_mask / lengths.
* padded-int32: the same with `dtype="int32"` (half the bytes to write).
* encode_arrow: `enc.encode_arrow(column, num_threads=T, allowed_special="all")`: the ragged ids, no
  truncation, no padding (what padded adds to it is the fill: the target is padded >= 0.9x).
* hf: `tok.encode_batch(texts, add_special_tokens=False)` after `enable_truncation(512)` and
  `enable_padding(pad_id=...)`, RAYON_NUM_THREADS=T: HF's padded Encodings, not yet arrays.
* gigatoken: `Tokenizer.from_json(text).encode_batch_padded(texts, pad_id=..., max_length=512,
  truncate=True)` (gigatoken 0.10, when installed; RAYON_NUM_THREADS=T): uint32 ids [B, L] and the
  lengths, the mask built from them inside the timer.
* hf+arrays: the same, then `np.array([e.ids ...])` and `np.array([e.attention_mask ...])`, as
  transformers' `return_tensors="np"` builds them (the target is padded >= 5x hf).

Methodology (as bench/README.md): every number is ONE timed pass in a FRESH process pinned to T CPUs
before any library is imported, after two untimed passes over other text (the UDHR translations and
the emoji file, bench.data.warmup_text, cut the same way); `--repeat N` keeps the fastest of N
processes. MB/s = 10**6 bytes of UTF-8 input per wall second; cpuMB/s per CPU second of the process
(the machine may be shared). exact: padded's input_ids and attention_mask equal HF's, batch for batch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import common  # noqa: E402

LIBS = ("padded", "padded-int32", "encode_arrow", "hf", "hf+arrays", "gigatoken")
MAX_LENGTH = 512
DOC_BYTES = 1500


def _docs(corpus: str) -> list[str]:
    from bench import data
    from bench.bench_e2e import _docs as cut

    return cut(data.corpus(corpus), DOC_BYTES)


def _batches(seq, rows: int) -> list:
    n = len(seq)
    if rows <= 0:
        return [seq]
    return [seq[i:i + rows] for i in range(0, n, rows)]


def worker(spec: dict) -> dict:
    import gc

    import numpy as np
    import pyarrow as pa

    from bench import data
    from bench.bench_e2e import _docs as cut

    lib, threads, rows = spec["lib"], spec["threads"], spec["batch_rows"]
    path = str(data.tokenizers_dir() / spec["model"] / "tokenizer.json")
    docs = _docs(spec["corpus"])
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    warm = cut(data.warmup_text(), DOC_BYTES)
    t_load = time.perf_counter()
    if lib in ("padded", "padded-int32", "encode_arrow"):
        import tltok_jit

        enc = tltok_jit.from_file(path)
        pad_id = enc.encode_single_token("<|end_of_text|>")
        target, warm_in = _batches(pa.array(docs, pa.string()), rows), _batches(pa.array(warm, pa.string()), rows)
        if lib.startswith("padded"):
            dtype = "int32" if lib == "padded-int32" else "int64"

            def call(col):
                return enc.encode_batch_padded(col, max_length=MAX_LENGTH, truncation=True, pad_id=pad_id,
                                               num_threads=threads, allowed_special="all", dtype=dtype)
        else:
            def call(col):
                return enc.encode_arrow(col, num_threads=threads, allowed_special="all")
    elif lib == "gigatoken":
        import gigatoken

        with open(path, encoding="utf-8") as f:
            g = gigatoken.Tokenizer.from_json(f.read())
        pad_id = 128001 if spec["model"] == "llama3" else 0
        target, warm_in = _batches(docs, rows), _batches(warm, rows)

        def call(texts):
            ids, lengths = g.encode_batch_padded(texts, pad_id=pad_id, max_length=MAX_LENGTH, truncate=True)
            return ids, (np.arange(ids.shape[1]) < lengths[:, None]).astype(np.int64)
    else:
        import tokenizers

        tok = tokenizers.Tokenizer.from_file(path)
        tok.enable_truncation(MAX_LENGTH)
        tok.enable_padding(pad_id=tok.token_to_id("<|end_of_text|>"), pad_token="<|end_of_text|>")
        target, warm_in = _batches(docs, rows), _batches(warm, rows)
        if lib == "hf":
            def call(texts):
                return tok.encode_batch(texts, add_special_tokens=False)
        else:
            def call(texts):
                encs = tok.encode_batch(texts, add_special_tokens=False)
                return (np.array([e.ids for e in encs], dtype=np.int64),
                        np.array([e.attention_mask for e in encs], dtype=np.int64))
    load_s = time.perf_counter() - t_load
    for _ in range(2):
        for b in warm_in:
            call(b)
    gc.collect()
    gc.disable()
    w0, c0 = time.perf_counter(), time.process_time()
    for b in target:
        r = call(b)  # a training loop hands each batch on and drops it
        del r
    w1, c1 = time.perf_counter(), time.process_time()
    gc.enable()
    # what the exactness check compares: the same calls again, outside the timer
    h = hashlib.sha256()
    n_ids = 0
    for r in (call(b) for b in target):
        if lib.startswith("padded"):
            ids, mask = r.input_ids, r.attention_mask
        elif lib == "hf":
            ids = np.array([e.ids for e in r], dtype=np.int64)
            mask = np.array([e.attention_mask for e in r], dtype=np.int64)
        elif lib in ("hf+arrays", "gigatoken"):
            ids, mask = r
        else:
            n_ids += len(r.values)
            continue
        h.update(np.ascontiguousarray(ids, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(mask, dtype=np.int64).tobytes())
        n_ids += int(mask.sum())
    return {**spec, "bytes": nbytes, "rows": len(docs), "wall": w1 - w0, "cpu": c1 - c0, "load_s": load_s,
            "n_ids": n_ids, "sha": h.hexdigest() if lib != "encode_arrow" else None}


def _find(rows: list[dict], r: dict, lib: str) -> dict | None:
    return next((x for x in rows if x["lib"] == lib and "wall" in x and all(
        x[k] == r[k] for k in ("model", "corpus", "threads", "batch_rows"))), None)


def _table(rows: list[dict]) -> str:
    lines = ["| corpus | rows/call | thr | lib | MB/s | cpuMB/s | padded vs this | padded vs this (cpu) | exact |",
             "|---|---:|---:|---|---:|---:|---:|---:|---|"]
    for r in rows:
        per = "all" if r["batch_rows"] <= 0 else str(r["batch_rows"])
        head = f"| {r['corpus']} | {per} | {r['threads']} | {r['lib']} |"
        if "error" in r:
            lines.append(f"{head} error: {r['error']} | | | | |")
            continue
        mine = _find(rows, r, "padded")
        ratio = f"{r['wall'] / mine['wall']:.2f}x" if mine and r["lib"] != "padded" else ""
        cratio = f"{r['cpu'] / max(mine['cpu'], 1e-9):.2f}x" if mine and r["lib"] != "padded" else ""
        exact = "" if r["sha"] is None else ("yes" if r.get("exact") else "NO")
        lines.append(f"{head} {r['bytes'] / r['wall'] / 1e6:.1f} | {r['bytes'] / max(r['cpu'], 1e-9) / 1e6:.1f} | "
                     f"{ratio} | {cratio} | {exact} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--model", default="llama3")
    ap.add_argument("--corpora", default="english,code")
    ap.add_argument("--batch-rows", default="0,256", help="rows per call (0: the whole column in one call)")
    ap.add_argument("--threads", type=int, default=2)
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
    rows: list[dict] = []
    for corpus in args.corpora.split(","):
        for batch_rows in (int(x) for x in args.batch_rows.split(",")):
            group = []
            for lib in libs:
                spec = {"lib": lib, "model": args.model, "corpus": corpus, "threads": args.threads,
                        "batch_rows": batch_rows}
                best = common.best_of(__file__, spec, args.repeat, args.timeout)
                group.append(best)
                msg = best.get("error") or (f"{best['bytes'] / best['wall'] / 1e6:.1f} MB/s "
                                            f"({best['bytes'] / max(best['cpu'], 1e-9) / 1e6:.1f} cpuMB/s)")
                print(f"{lib:12s} {corpus}/{batch_rows or 'all'}/t{args.threads}: {msg}", file=sys.stderr, flush=True)
            shas = {r["sha"] for r in group if r.get("sha")}
            for r in group:
                if r.get("sha"):
                    r["exact"] = len(shas) == 1
            rows += group
    table = _table(rows)
    print(table)
    if args.out:
        head = run.header(f"Fixed-shape batches: encode_batch_padded vs encode_arrow and HF tokenizers ({args.model})",
                          ("tokenizers", "numba", "numpy", "pyarrow"),
                          f"python -m bench padded {' '.join(argv)}") + [
            f"- ~1.5 KB documents; truncation to {MAX_LENGTH}, padding to the longest row of each call; every number "
            "a fresh process pinned to `thr` CPUs, warmed up on other text, the best of the repeats; "
            "padded vs this = this lib's wall time / padded's (above 1: padded is faster; (cpu): CPU seconds of the "
            "process); exact = input_ids and attention_mask equal HF's",
            "",
        ]
        out = Path(args.out)
        out.write_text("\n".join(head) + "\n" + table + "\n", encoding="utf-8")
        out.with_suffix(".json").write_text(json.dumps({"date": run.started, "commit": run.commit, "versions": run.versions,
                                                        "argv": argv, "rows": rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
