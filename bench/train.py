"""Training a byte-level BPE vocabulary: tltok_jit.train_bpe against Hugging Face `tokenizers`'
BpeTrainer (the same merges and ids) and nanochat's `rustbpe` (its own merge rules, for speed only).

    python bench/train.py                                    # 100 MB, vocab 32,000, 1 and 2 threads
    python bench/train.py --mb 20 --vocab-size 32000 --threads 2 --out bench/results/train.md

Corpus (built in each worker before the timer, the same bytes for every library): documents of
~4 KB cut at line ends from English (War and Peace), code (the CPython standard library's top-level
`.py` files) and multilingual text (the 106 UDHR translations and 三国演义), taken in the ratio
40 : 30 : 30 and repeated until the corpus has `--mb` MB: the sources are ~40 MB together, so a
100 MB corpus repeats them (piece counts scale, the distinct pieces do not).

Numbers: wall seconds of the whole training call (reading the Python strings, splitting, counting,
merging), each in a FRESH process pinned to T CPUs (`bench.common.run_one`), the fastest of
`--repeat`; peak RSS (VmHWM) of that process and its RSS before the call (the corpus itself).
tltok_jit's kernels come from the kernel cache (compiled beforehand by an untimed first run).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import sysconfig
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import common  # noqa: E402

LIBS = ("tltok_jit", "hf", "rustbpe")
CORPORA = REPO.parent / "shared" / "corpora"
DOC = 4096


def _docs(text: str) -> list[str]:
    out, cur, size = [], [], 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        size += len(line)
        if size >= DOC:
            out.append("".join(cur))
            cur, size = [], 0
    if cur:
        out.append("".join(cur))
    return out


def sources() -> dict[str, list[str]]:
    english = (CORPORA / "english-war-and-peace.txt").read_text(encoding="utf-8")
    lib = Path(sysconfig.get_paths()["stdlib"])
    code = "".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(lib.glob("*.py")))
    multi = [(CORPORA / "chinese-sanguo-yanyi.txt").read_text(encoding="utf-8")]
    multi += [p.read_text(encoding="utf-8", errors="replace") for p in sorted((CORPORA / "udhr").iterdir())
              if p.is_file()]
    return {"english": _docs(english), "code": _docs(code), "multilingual": _docs("\n".join(multi))}


def corpus(mb: float) -> list[str]:
    """Documents of the three sources interleaved 40:30:30 (by bytes) up to `mb` MB."""
    src = sources()
    share = {"english": 0.4, "code": 0.3, "multilingual": 0.3}
    target = int(mb * 1e6)
    out: list[str] = []
    for name, docs in src.items():
        want = int(target * share[name])
        got, i = 0, 0
        while got < want:
            d = docs[i % len(docs)]
            out.append(d)
            got += len(d.encode("utf-8"))
            i += 1
    # interleave deterministically so no library sees one source in a long run
    random.Random(0).shuffle(out)
    return out


def _rss_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def worker(spec: dict) -> dict:
    docs = corpus(spec["mb"])
    n_bytes = sum(len(d.encode("utf-8")) for d in docs)
    vocab = spec["vocab_size"]
    lib = spec["lib"]
    if lib == "tltok_jit":
        from tltok_jit.training import train_bpe

        def call():
            return len(train_bpe(docs, vocab, pattern="o200k_base", num_threads=spec["threads"]).ranks)
    elif lib == "hf":
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

        from tltok_jit.model.patterns import O200K_PATTERN

        def call():
            tok = Tokenizer(models.BPE())
            tok.pre_tokenizer = pre_tokenizers.Sequence([
                pre_tokenizers.Split(Regex(O200K_PATTERN), "isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
            trainer = trainers.BpeTrainer(vocab_size=vocab, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                          show_progress=False)
            tok.train_from_iterator(docs, trainer)
            return tok.get_vocab_size()
    elif lib == "rustbpe":
        import rustbpe

        from tltok_jit.model.patterns import O200K_PATTERN

        def call():
            tok = rustbpe.Tokenizer()
            tok.train_from_iterator(iter(docs), vocab, pattern=O200K_PATTERN)
            return tok.vocab_size
    else:
        raise ValueError(lib)
    rss0 = _rss_mb("VmRSS")
    t0 = time.perf_counter()
    n = call()
    wall = time.perf_counter() - t0
    return {**spec, "wall": wall, "bytes": n_bytes, "vocab": n, "rss_before_mb": rss0, "hwm_mb": _rss_mb("VmHWM")}


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "--worker":
        return common.serve_worker(argv[1], worker)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--libs", default=",".join(LIBS))
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    libs = common.known_libs(args.libs, LIBS)
    if libs is None:
        return 2
    run = common.Run()
    rows = []
    if "tltok_jit" in libs:  # compile (or load) the kernels outside the timed processes
        common.run_one(__file__, {"lib": "tltok_jit", "mb": 0.2, "vocab_size": 300, "threads": 1}, args.timeout)
    for threads in [int(t) for t in args.threads.split(",")]:
        for lib in libs:
            spec = {"lib": lib, "mb": args.mb, "vocab_size": args.vocab_size, "threads": threads}
            r = common.best_of(__file__, spec, args.repeat, args.timeout)
            print(json.dumps(r), flush=True)
            rows.append(r)
    lines = run.header(f"Training a {args.vocab_size:,}-token byte-level BPE on {args.mb:g} MB",
                       ("tokenizers", "rustbpe", "numba"),
                       "python bench/train.py " + " ".join(argv))
    lines += ["", "| threads | library | seconds | MB/s | vs HF | peak RSS MB | RSS before MB | vocab |",
              "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['threads']} | {r['lib']} | error: {r['error']} | | | | | |")
            continue
        hf = next((x["wall"] for x in rows if x.get("lib") == "hf" and x["threads"] == r["threads"]
                   and "wall" in x), None)
        speed = f"{hf / r['wall']:.1f}x" if hf else ""
        lines.append(f"| {r['threads']} | {r['lib']} | {r['wall']:.2f} | {r['bytes'] / 1e6 / r['wall']:.1f} | "
                     f"{speed} | {r['hwm_mb']:.0f} | {r['rss_before_mb']:.0f} | {r['vocab']} |")
    lines += ["", "The corpus repeats its ~40 MB of sources (see bench/train.py): the distinct pieces, which the "
              "merge step works on, are those of ~40 MB. rustbpe learns its own merges (not HF's); tltok_jit's "
              "equal HF's. The machine is shared (load above): a thread count of 2 gets less than 2 cores."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
