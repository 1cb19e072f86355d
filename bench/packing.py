"""Packing documents into training rows: fill of bfd / concat / pad, the time `pack` adds to
`encode_arrow`, and the loader end to end from Parquet.

    python -m bench packing                                  # both inputs, seq_len 2048,8192, 2 threads
    python -m bench packing --inputs docs1500 --seq-lens 2048 --repeat 1
    python -m bench packing --out bench/results/packing.md   # also writes packing.json beside it

Inputs (o200k_base ids, <|endoftext|> after every document):

* docs1500: War and Peace cut at line ends into ~1.5 KB documents (bench_e2e._docs), ~2,100
  documents of ~350 ids: a narrow spread of lengths.
* longtail: natural documents: the chapters of War and Peace (split before each "CHAPTER" line) and
  of 三国演义 (before each "第...回" line) and the 106 UDHR translations whole, ~590 documents from
  ~100 to ~10,000 ids.

Numbers:

* fill = non-pad ids / all slots of `pack(ids, seq_len, strategy=S, eos_id=...)` for each strategy
  (deterministic: computed once). TRL's `bfd` is reported when `trl` imports.
* pack ms: one `pack` call over the whole input's ids (an Arrow list column, encoded beforehand);
  encode ms: one `encode_arrow(column, num_threads=T)` over the same documents. Each number is ONE
  timed pass in a FRESH process pinned to T CPUs, after two untimed passes over other text (the UDHR
  openings and the emoji file, bench.data.warmup_text, cut the same way); `--repeat N` keeps the
  fastest of N processes. steady ms (pack only): the fastest of 10 more calls in that process
  (memory the previous result freed is reused, as in a loader's loop; the single pass pays
  first-touch page faults on every output page), against encode_arrow's single pass (encode_arrow
  repeated on the same column answers from its caches, so its repeats are not a fair baseline).
* loader: `TokenBatches` over the input written to Parquet (outside the timer; row groups of 256
  rows), seq_len, batch_size 8, shuffle_buffer 8192, num_threads=T, every batch taken; MB/s of text
  against encode_arrow's, and the process's peak RSS (VmHWM) against encode_arrow's process.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import common  # noqa: E402

INPUTS = ("docs1500", "longtail")
STRATEGIES = ("bfd", "concat", "pad")
EOS = "<|endoftext|>"


def documents(name: str) -> list[str]:
    from bench import data
    from bench.bench_e2e import _docs as cut

    if name == "docs1500":
        return cut(data.corpus("english"), 1500)
    if name == "longtail":
        out = []
        for corpus, head in (("english", r"^CHAPTER "), ("chinese", r"^\s*第.{1,8}回")):
            text = data.corpus(corpus)
            cuts = [m.start() for m in re.finditer(head, text, flags=re.M)]
            out += [text[a:z] for a, z in zip([0] + cuts, cuts + [len(text)]) if text[a:z].strip()]
        out += [p.read_text(encoding="utf-8") for p in sorted((data.corpora_dir() / "udhr").glob("*.txt"))]
        return out
    raise ValueError(f"unknown input {name!r}")


def _warm_docs() -> list[str]:
    from bench import data
    from bench.bench_e2e import _docs as cut

    return cut(data.warmup_text(), 1500)


def _hwm_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def worker(spec: dict) -> dict:
    import gc

    import pyarrow as pa

    import tltok_jit
    from tltok_jit.packing import pack

    kind, threads = spec["kind"], spec["threads"]
    enc = tltok_jit.get_encoding("o200k_base")
    eos = enc.encode_single_token(EOS)
    docs = documents(spec["input"])
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    col, warm = pa.array(docs, pa.string()), pa.array(_warm_docs(), pa.string())
    if kind == "fill":
        ids = enc.encode_arrow(col, num_threads=threads)
        rows = []
        for seq_len in spec["seq_lens"]:
            for strategy in STRATEGIES:
                b = pack(ids, seq_len, strategy=strategy, eos_id=eos)
                rows.append({"seq_len": seq_len, "strategy": strategy, "rows": len(b), "fill": b.fill,
                             "split": b.split})
            rows.append({"seq_len": seq_len, "strategy": "trl-bfd", **_trl_fill(ids, seq_len, eos)})
        return {**spec, "docs": len(docs), "ids": int(len(ids.values)) + len(docs), "bytes": nbytes, "fills": rows}
    if kind == "encode":
        def call():
            return enc.encode_arrow(col, num_threads=threads)

        for _ in range(2):
            enc.encode_arrow(warm, num_threads=threads)
    elif kind == "pack":
        ids = enc.encode_arrow(col, num_threads=threads)
        warm_ids = enc.encode_arrow(warm, num_threads=threads)

        def call():
            return pack(ids, spec["seq_len"], strategy=spec["strategy"], eos_id=eos)

        for _ in range(2):
            pack(warm_ids, spec["seq_len"], strategy=spec["strategy"], eos_id=eos)
    elif kind == "loader":
        import pyarrow.parquet as pq

        from tltok_jit.loader import TokenBatches

        tmp = Path(tempfile.mkdtemp(prefix="bench-packing-"))
        pq.write_table(pa.table({"text": col}), tmp / "docs.parquet", row_group_size=256)
        pq.write_table(pa.table({"text": warm}), tmp / "warm.parquet", row_group_size=256)

        def loader(path):
            return TokenBatches(str(path), enc, seq_len=spec["seq_len"], batch_size=8, shuffle_buffer=8192,
                                eos_id=eos, num_threads=threads, strategy=spec["strategy"])

        def call():
            n = 0
            for b in loader(tmp / "docs.parquet"):
                n += 1
            return n

        for _ in range(2):
            for _b in loader(tmp / "warm.parquet"):
                pass
    else:
        raise ValueError(kind)
    gc.collect()
    gc.disable()
    w0, c0 = time.perf_counter(), time.process_time()
    r = call()
    w1, c1 = time.perf_counter(), time.process_time()
    gc.enable()
    del r
    hwm = _hwm_mb()
    steady = None
    if kind == "pack":  # the same call again and again: memory malloc has handed back, caches warm
        steady = min(_timed(call) for _ in range(10))
    return {**spec, "bytes": nbytes, "wall": w1 - w0, "cpu": c1 - c0, "hwm_mb": hwm, "steady": steady}


def _timed(call) -> float:
    t = time.perf_counter()
    r = call()
    t = time.perf_counter() - t
    del r
    return t


def _trl_fill(ids, seq_len: int, eos: int) -> dict:
    """TRL's bfd over the same documents, when trl imports: "bfd_split" where TRL has it (its "bfd"
    cuts a document longer than seq_len to seq_len; ours splits it, as bfd_split does)."""
    try:
        import datasets
        from trl.data_utils import pack_dataset
    except ImportError as e:
        return {"error": f"{e.name or 'trl'} not installed"}  # trl.data_utils imports transformers
    lists = [x + [eos] for x in ids.to_pylist()]
    data = datasets.Dataset.from_dict({"input_ids": lists})
    try:
        packed = pack_dataset(data, seq_len, strategy="bfd_split")
    except ValueError:  # a TRL before bfd_split
        packed = pack_dataset(data, seq_len, strategy="bfd")
    n = sum(len(x) for x in packed["input_ids"])
    return {"rows": len(packed), "fill": n / (len(packed) * seq_len), "split": None}


def run_one(spec: dict, timeout: float) -> dict:
    return common.run_one(__file__, spec, timeout)


def _fill_table(fills: list[dict]) -> str:
    lines = ["| input | docs | ids | seq_len | strategy | rows | fill | split docs |", "|---|---:|---:|---:|---|---:|---:|---:|"]
    for f in fills:
        if "error" in f:
            lines.append(f"| {f['input']} | | | | | error: {f['error']} | | |")
            continue
        for r in f["fills"]:
            if "error" in r:
                lines.append(f"| {f['input']} | {f['docs']} | {f['ids']} | {r['seq_len']} | {r['strategy']} | "
                             f"{r['error']} | | |")
                continue
            lines.append(f"| {f['input']} | {f['docs']} | {f['ids']} | {r['seq_len']} | {r['strategy']} | "
                         f"{r['rows']} | {100 * r['fill']:.2f}% | {r['split'] if r['split'] is not None else ''} |")
    return "\n".join(lines)


def _time_table(rows: list[dict]) -> str:
    lines = ["| input | thr | seq_len | what | ms | cpu ms | vs encode_arrow | MB/s | peak RSS MB | steady ms | "
             "steady vs encode_arrow |", "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        what = r["kind"] if r["kind"] == "encode" else f"{r['kind']} {r['strategy']}"
        head = f"| {r['input']} | {r['threads']} | {r.get('seq_len', '')} | {what} |"
        if "error" in r:
            lines.append(f"{head} error: {r['error']} | | | | | | |")
            continue
        enc = next((x for x in rows if x["kind"] == "encode" and x["input"] == r["input"] and "wall" in x), None)
        ratio = f"{100 * r['wall'] / enc['wall']:.1f}%" if enc and r["kind"] == "pack" else (
            f"{enc['wall'] / r['wall']:.2f}x rate" if enc and r["kind"] == "loader" else "")
        steady = f"{1000 * r['steady']:.2f}" if r.get("steady") else ""
        sratio = f"{100 * r['steady'] / enc['wall']:.1f}%" if enc and r.get("steady") else ""
        lines.append(f"{head} {1000 * r['wall']:.1f} | {1000 * r['cpu']:.1f} | {ratio} | "
                     f"{r['bytes'] / r['wall'] / 1e6:.2f} | {r['hwm_mb']:.0f} | {steady} | {sratio} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--inputs", default=",".join(INPUTS))
    ap.add_argument("--seq-lens", default="2048,8192")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-loader", action="store_true", help="skip the loader runs")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--out", help="write the tables (markdown) there and the rows as JSON beside it")
    args = ap.parse_args(argv)
    if args.worker:
        return common.serve_worker(args.worker, worker)
    run = common.Run()
    seq_lens = [int(x) for x in args.seq_lens.split(",")]
    fills, times = [], []
    for name in args.inputs.split(","):
        f = run_one({"kind": "fill", "input": name, "threads": args.threads, "seq_lens": seq_lens}, args.timeout)
        fills.append(f)
        print(f"fill {name}: " + (f.get("error") or ", ".join(
            f"{r['strategy']}@{r['seq_len']} {100 * r['fill']:.2f}%" for r in f["fills"] if "fill" in r)),
            file=sys.stderr, flush=True)
        base = {"input": name, "threads": args.threads}
        specs = [{**base, "kind": "encode"}]
        specs += [{**base, "kind": "pack", "seq_len": s, "strategy": st} for s in seq_lens for st in STRATEGIES]
        if not args.no_loader:
            specs += [{**base, "kind": "loader", "seq_len": s, "strategy": "bfd"} for s in seq_lens]
        for spec in specs:
            r = common.best_of(__file__, spec, args.repeat, args.timeout)
            times.append(r)
            print(f"{spec['kind']:7s} {name} {spec.get('seq_len', '')} {spec.get('strategy', '')}: "
                  + (r.get("error") or f"{1000 * r['wall']:.1f} ms"), file=sys.stderr, flush=True)
    text = "## Fill\n\n" + _fill_table(fills) + "\n\n## Time\n\n" + _time_table(times)
    print(text)
    if args.out:
        head = run.header("Packing: fill of bfd / concat / pad, pack time against encode_arrow, the loader end to end",
                          ("numba", "numpy", "pyarrow", "trl"), f"python -m bench packing {' '.join(argv)}") + [
            "- o200k_base, <|endoftext|> after every document; each time a fresh process pinned to `thr` CPUs, "
            "warmed up on other text, the best of the repeats; pack's `vs encode_arrow` = pack ms / encode ms; "
            "the loader's = its text MB/s / encode_arrow's",
            "",
        ]
        out = Path(args.out)
        out.write_text("\n".join(head) + "\n" + text + "\n", encoding="utf-8")
        out.with_suffix(".json").write_text(json.dumps({"date": run.started, "commit": run.commit, "versions": run.versions,
                                                        "argv": argv, "fills": fills, "times": times}, indent=1),
                                            encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
