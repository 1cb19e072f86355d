"""Where the piece engine's time goes, stage by stage, on one whole text (one thread, in process).

    python bench/engine_stages.py r50k_base code
    python bench/engine_stages.py o200k_base english code chinese --calls 9 --out bench/results/stages.md

The engine (`kernels/encode.py`, `encode_ordinary_spans`) takes a window of pieces through stages:
scan (piece ends; blocks of 64 ASCII bytes or the pattern's scanner), pack (each short piece into two
words, its hash, a prefetch of its whole-token slot), look up (the whole-token table), then merge
(misses neither a token nor in the piece cache, side by side) and emit (ids written; cached pieces
copied from the piece cache). This script compiles copies of the engine that stop after a stage
(the kernel's source with a cut inserted at the stage's first line: a change there makes the
script fail, not measure something else) and times each on the same text, seen (every piece in
the piece cache: the cost of the stages themselves) and, for the whole engine, unseen (the piece
cache emptied before each call: what merging the text's pieces adds). Printed per corpus: ms and
ns a piece of each stage (the difference between consecutive cuts), min of `--calls` calls.

One more copy is a bound, not a stage: every piece the look-up stage finds in no token (a short
piece of plain bytes, or of any bytes where the character route is off) is written as one id at a
token's cost (wrong ids; nothing cached or merged for it), seen and unseen. It is the most a table
answering merged pieces in the same one probe as tokens (gigatoken's) could give this engine; on
text the character route takes (Chinese, other scripts) it changes little.

Each copy is one more compilation of the engine (~10-20 s each, cached in a temporary directory
per run). The anchors' own seen / first calls are in `bench/run.py`, not here: they have no stages
to cut.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import data  # noqa: E402

ENGINE = ROOT / "tltok_jit" / "kernels" / "encode.py"

# the engine's first line of a stage, and what a cut puts before it; every cut leaves the window
# loop with `pos` past the window, so the next window starts where the scan stopped
_PACK = "                if n <= SHORT:  # (n >= 1"
_LOOKUP = "            q = pos\n            nc = 0  # pieces looked up"
_MERGE = "            # of those, the ones not cached either"
_LEAVE = "            pos = q\n            continue\n"
_LOOKED_UP = "                    w_t[wi] = t\n"
EDITS = {
    "skip pack": (_PACK, "                if False and n <= SHORT:  # (n >= 1"),
    "stop before look up": (_LOOKUP, "            op += nw\n" + _LEAVE + _LOOKUP),
    "stop before merge": (_MERGE, "            for wi in range(nw):\n                out[op] = w_t[wi]\n"
                          "                op += 1\n" + _LEAVE + _MERGE),
    # a bound, not a stage: every piece the look-up stage finds in no token is written as one id
    # (0) at the cost of a token; its ids are wrong, its time what a one-probe table of merged
    # pieces (gigatoken's) could at best give this engine
    "non-tokens as tokens": (_LOOKED_UP, "                    t = t if t >= 0 else 0\n" + _LOOKED_UP),
}
# each copy of the engine: the edits it makes (the pieces' count is what "pack" writes: one a piece)
CUTS = {"scan": ("skip pack", "stop before look up"), "pack": ("stop before look up",),
        "lookup": ("stop before merge",), "bound": ("non-tokens as tokens",)}


def engine_copies(workdir: Path) -> dict[str, str]:
    """Module names of the engine's copies in `workdir`: 'whole' and one per cut."""
    src = ENGINE.read_text(encoding="utf-8")
    src = re.sub(r"^from \.(\w+) import", r"from tltok_jit.kernels.\1 import", src, flags=re.M)
    names = {"whole": "stage_whole"}
    (workdir / "stage_whole.py").write_text(src, encoding="utf-8")
    for anchor, _ in EDITS.values():
        if src.count(anchor) != 1:
            raise SystemExit(f"engine_stages: the engine changed; no single line {anchor.strip()!r} in {ENGINE}")
    for cut, edits in CUTS.items():
        copy = src
        for e in edits:
            copy = copy.replace(*EDITS[e])
        names[cut] = f"stage_{cut}"
        (workdir / f"stage_{cut}.py").write_text(copy, encoding="utf-8")
    return names


def profile(enc, text: str, modules: dict, calls: int) -> dict:
    """ms (min of `calls`) of each copy on `text` seen, the whole engine unseen too, and the pieces."""
    from tltok_jit.kernels.cache import empty_cache
    from tltok_jit.kernels.handle import handle_of

    buf = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    ref = enc.encode_ordinary_to_numpy(text, num_threads=1)  # also fills the piece cache: seen
    cache, work = enc.engine.serial_workspace()
    h, vals = handle_of(enc.engine.tables, cache), work[0]  # as a one-thread call's (kernels.handle)
    out = np.empty(len(buf) + 64, dtype=np.uint32)

    def run(m) -> int:
        spans = np.array([0, len(buf), 0], dtype=np.int64)
        m.encode_ordinary_spans(buf, spans, 1, h, out, 0, vals)
        return int(spans[2])

    for m in modules.values():
        run(m)
    if run(modules["whole"]) != len(ref) or not np.array_equal(out[:len(ref)], ref):
        raise SystemExit("engine_stages: the whole engine's copy does not give the encoding's ids")
    res = {"pieces": run(modules["pack"]), "ids": len(ref), "bytes": len(buf)}
    times = {k: [] for k in (*modules, "unseen", "bound unseen")}
    for _ in range(calls):
        for k, m in modules.items():
            t0 = time.perf_counter()
            run(m)
            times[k].append(time.perf_counter() - t0)
        for k, m in (("unseen", modules["whole"]), ("bound unseen", modules["bound"])):
            empty_cache(cache)
            t0 = time.perf_counter()
            run(m)
            times[k].append(time.perf_counter() - t0)
        run(modules["whole"])  # (seen again for the next round)
    res.update({k: 1e3 * min(v) for k, v in times.items()})
    return res


def table(rows: list[tuple[str, str, dict]]) -> str:
    head = ("| encoding | corpus | pieces | scan | pack | look up | merge + emit | whole, seen | whole, unseen |"
            " merging unseen pieces | bound, seen | bound, unseen |")
    lines = [head, "|" + "---|" * 2 + "---:|" * 10]
    for name, corpus, r in rows:
        steps = [r["scan"], r["pack"] - r["scan"], r["lookup"] - r["pack"], r["whole"] - r["lookup"]]
        ns = [1e6 * s / r["pieces"] for s in steps]
        cells = [f"{s:.2f} ms ({x:.1f} ns)" for s, x in zip(steps, ns)]
        lines.append(f"| {name} | {corpus} | {r['pieces']:,} | " + " | ".join(cells)
                     + f" | {r['whole']:.2f} ms | {r['unseen']:.2f} ms | {r['unseen'] - r['whole']:.2f} ms"
                     + f" | {r['bound']:.2f} ms | {r['bound unseen']:.2f} ms |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("encoding")
    ap.add_argument("corpora", nargs="+", choices=data.CORPORA)
    ap.add_argument("--calls", type=int, default=7)
    ap.add_argument("--out", type=Path, help="also write the table (markdown) here")
    a = ap.parse_args(argv)
    import tltok_jit

    try:
        enc = tltok_jit.get_encoding(a.encoding)
    except ValueError as e:  # an unknown name: the registry's message lists the known ones
        ap.error(str(e))
    enc.encode_to_numpy("x")
    rows = []
    with tempfile.TemporaryDirectory(prefix="engine-stages-") as tmp:
        sys.path.insert(0, tmp)
        modules = {k: importlib.import_module(v) for k, v in engine_copies(Path(tmp)).items()}
        for corpus in a.corpora:
            rows.append((a.encoding, corpus, profile(enc, data.corpus(corpus), modules, a.calls)))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    print(text)
    if a.out:
        a.out.write_text(f"`python bench/engine_stages.py {' '.join(argv or sys.argv[1:])}`\n\n{text}\n",
                         encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
