"""Streaming decode of held-back runs: cost per id as the run grows (linear total time, or a failure).

    python bench/stream_linear.py [--sizes 1000,10000,100000] [--repeat 3] [--budget 120] [--only TEXT]
                                  [--out bench/results/stream-linear.md]

Each case is a sequence of N ids that a streaming decoder must hold back text for, fed one id at a
time and then flushed:

  mistral-7b: a run of an emoji the vocabulary lacks (four byte-fallback ids each, `tokenizers`
              renders the whole run at once), the same run broken by 0xFF ten ids before its end,
              a run of the U+FFFD token, and English text (Metaspace pieces);
  gpt2 / llama3 tokenizer.json, r50k_base, whisper: lone UTF-8 continuation bytes;
  sentencepiece (llama2.model): the emoji run as byte pieces;
  symbol_table (llama2 pieces): a run of "\u2581" pieces (whitespace the final strip may remove);
  funasr_char: a run of "@@" pieces, and a run of single letters (an abbreviation).

Every run but the Metaspace text ends with one ordinary id. Methods: `StreamDecoder.push` per id +
`finish()` (Encodings), `decode_incremental([id], state)` per id + a final call, `token_pieces` of
the whole sequence. Each cell is microseconds of CPU time per id (the process's own, so that other
work on a shared machine does not count; best of --repeat at N <= 10,000, one run above), and every
run's text is checked against `decode`. A case whose cost per id at some N is more than 3x its cost
at the smallest N grows faster than linearly: the script then exits 1, and does not run that case
at larger N (they would only take long). So does a case that took longer than --budget seconds of
wall time at some N.

Assets come from the shared folder (`$TLTOK_SHARED` or ../shared); cases whose files are missing are
reported as skipped, with the path.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("TLTOK_SHARED") or (ROOT.parent / "shared")).resolve()
os.environ.setdefault("TLTOK_DATA", str(SHARED / "tokenizers"))
os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
os.environ.setdefault("TLTOK_COMPILE", "foreground")  # the kernels, never the Python encoder meanwhile

import tltok_jit  # noqa: E402
from bench.bench_incremental_decode import symbol_table_spec  # noqa: E402
from tltok_jit import TokenizerSpec, build_tokenizer  # noqa: E402
from tltok_jit.streaming.decode import StreamDecoder, token_tables  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
MAX_GROWTH = 3.0
TOK = SHARED / "tokenizers"
EMOJI = "\U0001F9A1"  # U+1F9A1 BADGER: no Mistral-7B or Llama-2 piece, so four byte-fallback ids
METHODS = ("push", "incremental", "pieces")


@dataclass
class Case:
    label: str
    coder: object                 # an Encoding (all methods) or a registry Tokenizer (no `push`)
    make: object                  # n -> list of n ids
    methods: tuple = METHODS
    cells: dict = field(default_factory=dict)  # (method, n) -> us per id, or a note
    made: dict = field(default_factory=dict)  # n -> make(n), while the case runs

    def ids(self, n: int) -> list:
        if n not in self.made:
            self.made[n] = self.make(n)
        return self.made[n]


def _cycle(unit: list, n: int, head: list = (), tail: list = ()) -> list:
    body = n - len(head) - len(tail)
    return list(head) + (unit * (body // len(unit) + 1))[:body] + list(tail)


def _single_byte_ids(enc) -> dict:
    """byte -> id of the token that is that byte alone."""
    return {b[0]: i for i, b in enumerate(token_tables(enc).token_bytes) if b is not None and len(b) == 1}


def _mistral_cases(path: Path) -> list:
    enc = tltok_jit.from_file(str(path))
    byte = {b: enc.encode_single_token(f"<0x{b:02X}>") for b in range(256)}
    word, end = enc.encode("Badger"), enc.encode(" ok")[-1:]
    run = [byte[b] for b in EMOJI.encode()]
    fffd = enc.encode_single_token("\ufffd")
    corpus = SHARED / "corpora" / "english-war-and-peace.txt"

    def english(n):  # the same prose at every n: 20,000 characters from the middle of the novel, repeated
        text = corpus.read_text(encoding="utf-8")[1_000_000:1_020_000] if corpus.is_file() else "a quick fox " * 2000
        return _cycle(enc.encode(text), n)

    def broken(n):
        ids = _cycle(run, n, word, end)
        ids[max(len(word), n - 10)] = byte[0xFF]
        return ids

    return [
        Case("mistral-7b: emoji byte-fallback run", enc, lambda n: _cycle(run, n, word, end)),
        Case("mistral-7b: emoji run, 0xFF 10 ids before its end", enc, broken),
        Case("mistral-7b: U+FFFD token run", enc, lambda n: _cycle([fffd], n, word, end)),
        Case("mistral-7b: English text (Metaspace pieces)", enc, english),
    ]


def _continuation_case(label: str, coder, enc) -> Case:
    byte = _single_byte_ids(enc)
    unit = [byte[b] for b in range(0x80, 0xC0)]
    word = enc.encode("ok")
    methods = METHODS if coder is enc else ("incremental", "pieces")
    return Case(label, coder, lambda n: _cycle(unit, n, word, word), methods)


def _kind_cases(tmp: Path) -> list:
    out = []
    model = TOK / "sentencepiece" / "llama2.model"
    if model.is_file():
        sp = build_tokenizer(TokenizerSpec("sentencepiece", {"model": model}))
        ids = sp.encode("a" + EMOJI)
        run = [i for i in ids if sp.model.pieces[i].startswith("<0x")]
        word, end = sp.encode("Badger"), sp.encode(" ok")
        out.append(Case("sentencepiece (llama2.model): emoji byte-piece run", sp,
                        lambda n: _cycle(run, n, word, end), ("incremental", "pieces")))
        st = build_tokenizer(symbol_table_spec(tmp, sp))
        space = sp.model.pieces.index("\u2581")
        out.append(Case("symbol_table (llama2 pieces): U+2581 run", st,
                        lambda n: _cycle([space], n, word, end), ("incremental", "pieces")))
    else:
        out.append(f"sentencepiece, symbol_table: skipped, missing {model}")
    tokens = ["<blank>", "<s>", "</s>", "hel@@", "lo", "a", "b", "ok", "\u4f60", "<unk>"]
    path = tmp / "tokens.json"
    path.write_text(json.dumps(tokens, ensure_ascii=False), encoding="utf-8")
    fa = build_tokenizer(TokenizerSpec("funasr_char", {"tokens": path}))
    ix = tokens.index
    out.append(Case("funasr_char: @@ piece run", fa,
                    lambda n: _cycle([ix("hel@@")], n, [ix("ok")], [ix("lo")]), ("incremental", "pieces")))
    out.append(Case("funasr_char: single-letter run (abbreviation)", fa,
                    lambda n: _cycle([ix("a"), ix("b")], n, [ix("ok")], [ix("\u4f60")]), ("incremental", "pieces")))
    return out


def cases(tmp: Path) -> list:
    """The cases whose assets exist; a str for each group that is skipped (naming the missing file)."""
    out: list = []
    mistral = TOK / "mistral-7b" / "tokenizer.json"
    out += _mistral_cases(mistral) if mistral.is_file() else [f"mistral-7b: skipped, missing {mistral}"]
    for name in ("gpt2", "llama3"):
        p = TOK / name / "tokenizer.json"
        if p.is_file():
            enc = tltok_jit.from_file(str(p))
            out.append(_continuation_case(f"{name} tokenizer.json: continuation-byte run", enc, enc))
        else:
            out.append(f"{name}: skipped, missing {p}")
    r50k = tltok_jit.get_encoding("r50k_base")
    out.append(_continuation_case("r50k_base: continuation-byte run", r50k, r50k))
    ranks = TOK / "tiktoken" / "whisper_multilingual.tiktoken"
    if ranks.is_file():
        wh = build_tokenizer(TokenizerSpec("whisper", {"ranks": ranks}))
        out.append(_continuation_case("whisper (kind): continuation-byte run", wh, wh.encoding))
    else:
        out.append(f"whisper: skipped, missing {ranks}")
    return out + _kind_cases(tmp)


def run_once(case: Case, method: str, ids: list) -> tuple:
    """(seconds, text) of one streaming pass over `ids`."""
    coder = case.coder
    clock = time.process_time  # CPU time: on a shared machine a long pass is preempted more often than a short one
    if method == "push":
        dec = StreamDecoder(coder)
        push = dec.push
        t0 = clock()
        parts = [push(i) for i in ids]
        parts.append(dec.finish())
    elif method == "incremental":
        inc = coder.decode_incremental
        state: dict = {}
        t0 = clock()
        parts = [inc([i], state) for i in ids]
        parts.append(inc([], state, final=True))
    else:
        t0 = clock()
        parts = coder.token_pieces(ids)
    return clock() - t0, "".join(parts)


def measure(case: Case, method: str, n: int, repeat: int) -> float:
    """Microseconds per id: the best of `repeat` passes (one above 10,000 ids), checked against decode."""
    ids = case.ids(n)
    assert len(ids) == n, (case.label, len(ids), n)
    expected = case.coder.decode(ids)
    best = float("inf")
    for _ in range(repeat if n <= 10_000 else 1):
        gc.collect()
        seconds, text = run_once(case, method, ids)
        if text != expected:
            raise AssertionError(f"{case.label} / {method}: streamed text differs from decode at n={n}")
        best = min(best, seconds)
    return best / n * 1e6


def run(sizes, repeat: int, budget: float, only: str | None, log=print) -> tuple:
    """(cases, skipped notes, failures) with every case's cells filled."""
    failures = []
    with tempfile.TemporaryDirectory() as d:
        found = cases(Path(d))
        todo = [c for c in found if not isinstance(c, str) and (only is None or only in c.label)]
        skipped = [c for c in found if isinstance(c, str)]
        for case in todo:
            for method in case.methods:
                run_once(case, method, case.ids(64))  # warm up: kernels, tables, first-call costs
                for n in sizes:
                    t0 = time.perf_counter()
                    us = measure(case, method, n, repeat)
                    case.cells[method, n] = us
                    took = time.perf_counter() - t0
                    log(f"{case.label:52s} {method:12s} n={n:>7,}  {us:9.2f} us/id  ({took:.1f} s)")
                    first = case.cells[method, sizes[0]]
                    if us > MAX_GROWTH * first:
                        failures.append(f"{case.label} / {method}: {us:.2f} us/id at N = {n:,} vs "
                                        f"{first:.2f} at N = {sizes[0]:,} ({us / first:.1f}x)")
                        why = f"{us / first:.0f}x at N = {n:,} already"
                    elif took > budget:
                        failures.append(f"{case.label} / {method}: N = {n:,} took {took:.0f} s (budget {budget:.0f} s)")
                        why = f"N = {n:,} took {took:.0f} s"
                    else:
                        continue
                    for m in sizes[sizes.index(n) + 1:]:  # growing faster than linearly: larger N only take long
                        case.cells[method, m] = f"not run ({why})"
                    break
            case.made.clear()
    return todo, skipped, failures


def table(todo, sizes) -> list:
    lines = ["| case | method | " + " | ".join(f"N = {n:,}" for n in sizes) + " | largest / smallest |",
             "|---|---|" + "---:|" * (len(sizes) + 1)]
    for case in todo:
        for method in case.methods:
            cells = [case.cells.get((method, n), "") for n in sizes]
            run = [c for c in cells if isinstance(c, float)]  # the sizes run
            growth = f"{run[-1] / run[0]:.1f}x" if len(run) > 1 else "-"
            lines.append(f"| {case.label} | {method} | "
                         + " | ".join(f"{c:.2f}" if isinstance(c, float) else c for c in cells) + f" | {growth} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated run lengths (ids)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=float, default=120.0,
                    help="seconds one size may take before the larger ones are dropped")
    ap.add_argument("--only", default=None, help="run the cases whose label contains this text")
    ap.add_argument("--out", type=Path, default=None, help="write the markdown table here")
    args = ap.parse_args(argv)
    try:
        sizes = tuple(sorted({int(s) for s in args.sizes.split(",")}))
    except ValueError:
        ap.error(f"--sizes: not a comma-separated list of integers: {args.sizes!r}")
    if len(sizes) < 2 or sizes[0] < 64:
        ap.error("--sizes: give at least two sizes, each of at least 64 ids")

    todo, skipped, failures = run(sizes, args.repeat, args.budget, args.only)
    lines = [
        "# Streaming decode of held-back runs: microseconds per id",
        "",
        f"`python bench/stream_linear.py --sizes {','.join(map(str, sizes))} --repeat {args.repeat}`; "
        f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d')}.",
        "",
        *table(todo, sizes),
        "",
        *(f"- {s}" for s in skipped),
    ]
    if failures:
        lines += ["", f"Above-linear growth (more than {MAX_GROWTH:g}x the cost per id at the smallest N):",
                  *(f"- {f}" for f in failures)]
    else:
        lines += ["", f"Every case within {MAX_GROWTH:g}x of its cost at N = {sizes[0]:,}."]
    out = "\n".join(lines) + "\n"
    print(out)
    if args.out is not None:
        args.out.write_text(out, encoding="utf-8")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
