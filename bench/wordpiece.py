"""WordPiece (all-MiniLM-L6-v2's tokenizer.json): our `encode_batch` / `encode_arrow` against HF tokenizers'
`encode_batch`, on ~1.5 KB documents.

    python bench/wordpiece.py                         # english x threads 1,2 x every lib, best of 3
    python bench/wordpiece.py --corpora english,chinese --threads 2 --repeat 1 --out bench/results/wordpiece.md

Input: the corpus (bench/data.py: english = War and Peace 3.2 MB, chinese = 三国演义 1.8 MB, code =
CPython stdlib .py files >= 3 MB) cut at line ends into ~1.5 KB documents (bench_e2e._docs), as a list
of str (and an Arrow string column for encode_arrow), made outside the timer.

* ours: `tok.encode_batch(docs, num_threads=T)`: a list of id lists, as HF's `[e.ids for e in ...]`.
* ours-numpy: `tok.encode_batch_to_numpy(docs, num_threads=T)`: flat uint32 ids and offsets.
* ours-arrow: `tok.encode_arrow(column, num_threads=T)`: list<uint32>.
* hf: `tok.encode_batch(docs, add_special_tokens=False)` with the file's truncation and padding turned
  off (the same ids), RAYON_NUM_THREADS=T; then `[e.ids for e in encodings]` (hf-ids, the same output
  as ours) is timed too.
* tokie (0.1): `Tokenizer.from_json(path).encode_batch(docs, add_special_tokens=False)`, then the ids.
* kitoken (0.11): `Kitoken.from_file(a copy of the file without its truncation / padding)
  .encode_all(docs, False)`: id lists (kitoken applies the file's padding otherwise).

Every number is ONE timed pass in a FRESH process pinned to T CPUs before any library is imported,
after two untimed passes over other text (bench.data.warmup_text: the UDHR translations and the
emoji file, cut the same way); `--repeat N` keeps the fastest. MB/s = 10**6 bytes of UTF-8 input per
wall second; cpuMB/s per CPU second of the process (the machine may be shared). exact: the ids equal
HF's (sha256 of every row's ids).
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

LIBS = ("ours", "ours-numpy", "ours-arrow", "hf", "hf-ids", "tokie", "kitoken")
DOC_BYTES = 1500


def worker(spec: dict) -> dict:
    import gc

    import numpy as np

    from bench import data
    from bench.bench_e2e import _docs as cut

    lib, threads = spec["lib"], spec["threads"]
    path = str(data.tokenizers_dir() / "minilm" / "tokenizer.json")
    docs = cut(data.corpus(spec["corpus"]), DOC_BYTES)
    warm = cut(data.warmup_text(), DOC_BYTES)
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    t_load = time.perf_counter()
    if lib.startswith("ours"):
        import tltok_jit

        tok = tltok_jit.from_file(path)
        if lib == "ours":
            def call(texts):
                return tok.encode_batch(texts, num_threads=threads)
        elif lib == "ours-numpy":
            def call(texts):
                return tok.encode_batch_to_numpy(texts, num_threads=threads)
        else:
            import pyarrow as pa

            docs_in, warm_in = pa.array(docs, pa.string()), pa.array(warm, pa.string())

            def call(col):
                return tok.encode_arrow(col, num_threads=threads)
    elif lib == "tokie":
        import tokie

        tok = tokie.Tokenizer.from_json(path)

        def call(texts):
            return [list(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)]
    elif lib == "kitoken":
        import tempfile

        import kitoken

        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        d["truncation"] = d["padding"] = None
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
            json.dump(d, f)
        tok = kitoken.Kitoken.from_file(f.name)

        def call(texts):
            return tok.encode_all(texts, False)
    else:
        import tokenizers

        tok = tokenizers.Tokenizer.from_file(path)
        tok.no_truncation()
        tok.no_padding()
        if lib == "hf":
            def call(texts):
                return tok.encode_batch(texts, add_special_tokens=False)
        else:
            def call(texts):
                return [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    if lib != "ours-arrow":
        docs_in, warm_in = docs, warm
    load_s = time.perf_counter() - t_load
    for _ in range(2):
        call(warm_in)
    gc.collect()
    gc.disable()
    w0, c0 = time.perf_counter(), time.process_time()
    r = call(docs_in)
    w1, c1 = time.perf_counter(), time.process_time()
    gc.enable()
    if lib == "ours-numpy":
        ids, off = r
        rows = [ids[off[i]:off[i + 1]].tolist() for i in range(len(off) - 1)]
    elif lib == "ours-arrow":
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
    ap.add_argument("--threads", default="1,2")
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
    table = common.ratio_table(rows, lambda r: "hf-ids", "hf-ids")
    print(table)
    if args.out:
        head = run.header("WordPiece (all-MiniLM-L6-v2): encode_batch / encode_arrow against HF tokenizers",
                          ("tokenizers", "numba", "numpy", "pyarrow"),
                          f"python bench/wordpiece.py {' '.join(argv)}") + [
            "- ~1.5 KB documents, one call over all of them; every number a fresh process pinned to `thr` CPUs, "
            "warmed up on other text, the best of the repeats; x hf-ids = HF's time for the same ids as lists / "
            "this lib's; exact = the ids equal HF's",
            "",
        ]
        out = Path(args.out)
        out.write_text("\n".join(head) + "\n" + table + "\n")
        out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
