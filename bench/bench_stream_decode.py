"""Streaming decode throughput: many streams, one new token per stream per step.

    python bench/bench_stream_decode.py [--streams 256] [--steps 1000] [--encoding r50k_base]
                                        [--corpus mixed|english|chinese|emoji] [--repeat 3]

Compares, on the same id matrix (stream i decodes ids[i*steps:(i+1)*steps] of the encoded corpus):

  push        a Python loop of `StreamDecoder.push`, one decoder per stream
  batched     `MultiStreamDecoder.step(ids)`: one kernel call per step for all streams
  masked      `MultiStreamDecoder.step_masked` with a random half of the streams active
  hf          `tokenizers.decoders.DecodeStream.step`, one per stream (r50k_base only: the GPT-2
              tokenizer.json has the same ids)
  incremental `decode_incremental(enc, [id], state)` per token (the dict-state API)
  pieces      `token_pieces` over each whole stream (one kernel call per stream)

Every method's concatenated output (+ finish) is checked against decode(ids) of each stream
(HF's DecodeStream has no flush and holds back a whole token that ends mid-character, so its
output is checked to be a prefix of decode, and counted equal up to the final U+FFFD). Each
number is the best of --repeat runs, in tokens per second (all streams). The corpora come from
the shared folder (`$TLTOK_SHARED` or ../shared); when they hold fewer than streams x steps
tokens the id sequence is repeated, and the output says so.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "tests"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
SHARED = Path(os.environ.get("TLTOK_SHARED") or (ROOT.parent / "shared")).resolve()
os.environ.setdefault("TLTOK_DATA", str(SHARED / "tokenizers"))

from tltok_jit.streaming.decode import MultiStreamDecoder, StreamDecoder, decode_incremental, token_pieces  # noqa: E402


def load_encoding(name: str):
    """The real Encoding when it loads; else the test helper's table built from the rank file."""
    try:
        import tltok_jit

        return tltok_jit.get_encoding(name), "tltok_jit.Encoding"
    except Exception as e:  # noqa: BLE001 - report and fall back
        print(f"# tltok_jit.get_encoding({name!r}) failed ({type(e).__name__}: {e}); using the rank table helper")
        from stream_helpers import rank_table

        return rank_table(name), "stream_helpers.RankTable"


def corpus_text(kind: str) -> str:
    c = SHARED / "corpora"
    parts = {
        "english": lambda: (c / "english-war-and-peace.txt").read_text("utf-8"),
        "chinese": lambda: (c / "chinese-sanguo-yanyi.txt").read_text("utf-8"),
        "emoji": lambda: (c / "emoji-test.txt").read_text("utf-8"),
        "udhr": lambda: "\n".join(p.read_text("utf-8") for p in sorted((c / "udhr").glob("*.txt"))),
    }
    if kind == "mixed":
        # 2,000-character blocks of English, Chinese, the UDHR translations and the emoji file, in
        # turn, so that any prefix (any streams x steps) holds all of them
        texts = [parts["english"](), parts["chinese"](), parts["udhr"](), parts["emoji"]()]
        blocks = [[t[i:i + 2000] for i in range(0, len(t), 2000)] for t in texts]
        out = []
        for k in range(max(map(len, blocks))):
            out.extend(b[k % len(b)] for b in blocks)
        return "".join(out)
    return parts[kind]()


def encode(name: str, text: str) -> np.ndarray:
    from stream_helpers import tiktoken_encoding

    return np.asarray(tiktoken_encoding(name).encode_ordinary(text), dtype=np.int64)


def best(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=256)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--encoding", default="r50k_base")
    ap.add_argument("--corpus", default="mixed", choices=["mixed", "english", "chinese", "emoji", "udhr"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip", default="", help="comma-separated methods to skip")
    a = ap.parse_args(argv)
    S, N = a.streams, a.steps
    skip = set(filter(None, a.skip.split(",")))

    enc, enc_kind = load_encoding(a.encoding)
    all_ids = encode(a.encoding, corpus_text(a.corpus))
    need = S * N
    repeated = need > len(all_ids)
    if repeated:
        all_ids = np.tile(all_ids, -(-need // len(all_ids)))
    ids = all_ids[:need].reshape(S, N)              # row i: stream i
    cols = np.ascontiguousarray(ids.T)               # row k: step k, one id per stream
    cols_list = cols.tolist()
    expect = [enc.decode(row) for row in ids.tolist()]
    n_tok = S * N

    # what a decoder without a flush (HF DecodeStream) can emit: decode(ids) minus a final U+FFFD
    # for an unfinished last character
    tails = []
    for row in ids.tolist():
        d = StreamDecoder(enc)
        for x in row:
            d.push(x)
        tails.append(d.finish())
    expect_unflushed = [e[: len(e) - len(t)] for e, t in zip(expect, tails)]

    def check(name, per_step, finals):
        got = ["".join(parts) for parts in zip(*per_step)] if per_step else [""] * S
        if finals is None:  # HF: no flush; it also holds back a whole token that ends mid-character
            exact = sum(g == e for g, e in zip(got, expect_unflushed))
            prefix = all(e.startswith(g) for g, e in zip(got, expect))
            return f"{prefix} (a prefix of decode in every stream; equal up to the final U+FFFD in {exact}/{S})"
        ok = all(g + f == e for g, f, e in zip(got, finals, expect))
        if not ok:
            raise SystemExit(f"{name}: streamed text differs from decode(ids)")
        return ok

    results = {}

    def report(name, secs, ok, note=""):
        results[name] = {"tokens_per_s": n_tok / secs, "seconds": secs, "equals_decode": ok}
        print(f"{name:12s} {n_tok / secs / 1e6:8.3f} M tokens/s  ({secs * 1e3:9.1f} ms)  equals decode: {ok}  {note}")

    print(f"# {S} streams x {N} steps = {n_tok} tokens of {a.encoding} ({enc_kind}), corpus {a.corpus}"
          + (" (id sequence repeated to fill)" if repeated else "")
          + f"; {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs")

    # warm-up: compile / load the kernels and build the per-token tables
    MultiStreamDecoder(enc, S).step(cols[0])
    StreamDecoder(enc).push(int(cols[0, 0]))
    token_pieces(enc, ids[0, :10])

    if "push" not in skip:
        def run_push():
            decs = [StreamDecoder(enc) for _ in range(S)]
            pushes = [d.push for d in decs]
            out = [[p(x) for p, x in zip(pushes, col)] for col in cols_list]
            return out, [d.finish() for d in decs]
        secs, (out, fin) = best(run_push, a.repeat)
        report("push", secs, check("push", out, fin))

    if "batched" not in skip:
        def run_batched():
            m = MultiStreamDecoder(enc, S)
            step = m.step
            out = [step(col) for col in cols]
            return out, m.finish_all()
        secs, (out, fin) = best(run_batched, a.repeat)
        report("batched", secs, check("batched", out, fin), "(one kernel call per step)")

    if "masked" not in skip:
        rng = np.random.default_rng(0)
        masks = rng.random((N, S)) < 0.5
        n_active = int(masks.sum())

        def run_masked():
            m = MultiStreamDecoder(enc, S)
            out = [m.step_masked(col, mask) for col, mask in zip(cols, masks)]
            return out, m.finish_all()
        secs, (out, fin) = best(run_masked, a.repeat)
        # check against push over the same masked schedule
        decs = [StreamDecoder(enc) for _ in range(S)]
        ok = all(out[k][i] == (decs[i].push(int(cols[k, i])) if masks[k, i] else "")
                 for k in range(N) for i in range(S))
        ok = ok and fin == [d.finish() for d in decs]
        if not ok:
            raise SystemExit("masked: differs from the per-stream push loop")
        results["masked"] = {"tokens_per_s": n_active / secs, "seconds": secs, "equals_push": ok}
        print(f"{'masked':12s} {n_active / secs / 1e6:8.3f} M tokens/s  ({secs * 1e3:9.1f} ms)  "
              f"equals push: {ok}  (~half of the streams active per step, {n_active} tokens)")

    if "hf" not in skip:
        try:
            from tokenizers import Tokenizer
            from tokenizers.decoders import DecodeStream
        except ImportError:
            DecodeStream = None
        path = SHARED / "tokenizers" / "gpt2" / "tokenizer.json"
        if DecodeStream is None:
            print("hf           skipped: tokenizers.decoders.DecodeStream is not installed")
        elif a.encoding != "r50k_base":
            print(f"hf           skipped: no tokenizer.json with {a.encoding}'s ids (only r50k_base = gpt2)")
        elif not path.is_file():
            print(f"hf           skipped: MISSING {path}")
        else:
            tok = Tokenizer.from_file(str(path))

            def run_hf():
                streams = [DecodeStream(skip_special_tokens=False) for _ in range(S)]
                steps = [s.step for s in streams]
                return [[st(tok, x) or "" for st, x in zip(steps, col)] for col in cols_list]
            secs, out = best(run_hf, a.repeat)
            report("hf", secs, check("hf", out, None),
                   "(tokenizers.decoders.DecodeStream, one per stream)")

    if "incremental" not in skip:
        rows = ids.tolist()

        def run_inc():
            texts = []
            for row in rows:
                st: dict = {}
                for x in row:
                    decode_incremental(enc, [x], st)
                texts.append(st["text"])
            return texts
        secs, texts = best(run_inc, a.repeat)
        ok = texts == expect
        report("incremental", secs, ok, "(decode_incremental, one id per call, stream after stream)")

    if "pieces" not in skip:
        def run_pieces():
            return [token_pieces(enc, row) for row in ids]
        secs, pieces = best(run_pieces, a.repeat)
        ok = ["".join(p) for p in pieces] == expect
        report("pieces", secs, ok, "(token_pieces, one call per whole stream)")

    print(json.dumps({"bench": "stream_decode", "encoding": a.encoding, "corpus": a.corpus, "streams": S,
                      "steps": N, "repeated": repeated, "encoding_impl": enc_kind,
                      "results": {k: {kk: (round(vv, 6) if isinstance(vv, float) else vv) for kk, vv in v.items()}
                                  for k, v in results.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
