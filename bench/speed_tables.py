"""The speed targets' four tables from one command: tltok_jit against tiktoken, gigatoken and fastokens
(and HF tokenizers on tokenizer.json models), every number from bench/run.py's and bench/bench_hf.py's
fresh-process workers in this run, every id checked against the oracle.

    python bench/speed_tables.py                     # best of 3 processes per number (~1 h on 2 cores)
    python bench/speed_tables.py --repeat 1 --out bench/results/speed-tables.md

Tables (MB/s, or thousands of calls a second; in brackets the ratio to tiktoken in the same run;
last column ours over the best anchor of the row):
1. one whole text on one thread (r50k_base, o200k_base; English, code, Chinese, the UDHR scripts
   corpus): ours `encode_ordinary` (a list) and `encode_ordinary_to_numpy` (a uint32 array), the others
   their single encode (gigatoken's returns a uint32 array, fastokens' a list: each is held to ours of
   the same output);
2. ~1.5 KB documents on two threads: ours `encode_arrow`, fastokens `encode_batch_flat`;
3. one 20-character string per call (`encode_ordinary` in a Python loop);
4. tokenizer.json models (Llama-3, Qwen2.5) on one thread (whole text) and two (documents), against
   HF tokenizers 0.23, HF's 1.0 pre-release (`hf-rc3`, its own venv: --rc3-python, see bench_hf.py),
   fastokens, tokie and kitoken (each where installed).
The raw rows go to bench/results/ beside the Markdown (run.py's and bench_hf.py's JSON).

    python bench/speed_tables.py --tables hf --rc3-python /tmp/rc3venv/bin/python --out bench/results/x.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import bench_hf, run  # noqa: E402

ANCHORS = ("gigatoken", "fastokens")
CORPORA = ("english", "code", "chinese", "scripts")
ENCODINGS = ("r50k_base", "o200k_base")
HF_MODELS = ("llama3", "qwen2.5")
HF_CORPORA = ("english", "chinese", "code")
HF_ANCHORS = ("tokenizers", "hf-rc3", "fastokens", "tokie", "kitoken")
HF_LABELS = {"tokenizers": "HF tokenizers 0.23", "hf-rc3": "HF tokenizers 1.0.0rc3"}


def _cell(v: float | None, base: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.1f}" + (f" ({v / base:.1f}x)" if base else "")


def _ours_over_best(ours: float | None, anchors: list[float | None]) -> str:
    best = max((a for a in anchors if a is not None), default=None)
    return "n/a" if ours is None or best is None else f"{ours / best:.2f}"


def tiktoken_tables(rows: list[dict]) -> list[str]:
    def mbps(mode, lib, enc, corpus, threads):
        for r in rows:
            if (r["mode"], r["lib"], r["encoding"], r["corpus"], r["threads"]) == (mode, lib, enc, corpus, threads):
                if r.get("status") == "ok" and r.get("exact") is not False:
                    return r["n_items"] / r["seconds"] / 1e3 if mode == "short_loop" else r["mbps"]
        return None

    out = ["### 1 thread, one whole text (MB/s)", "",
           "Ours twice: `encode_ordinary` gives a list, as fastokens' `.ids` does, and `encode_ordinary_to_numpy` "
           "a uint32 array, as gigatoken's `encode` does; each anchor is held to our call that returns what it "
           "returns (the last column: the lower of the two ratios).", "",
           "| | tltok_jit (list) | tltok_jit (numpy) | tiktoken | gigatoken (numpy) | fastokens (list) "
           "| ours / best anchor |", "|---|---:|---:|---:|---:|---:|---:|"]
    for enc in ENCODINGS:
        for corpus in CORPORA:
            base = mbps("whole", "tiktoken", enc, corpus, 1)
            o = mbps("whole", "tltok_jit", enc, corpus, 1)
            o_np = mbps("whole", "tltok_jit[numpy]", enc, corpus, 1)
            giga, fast = (mbps("whole", lib, enc, corpus, 1) for lib in ANCHORS)
            pairs = [(o_np if o_np is not None else o, giga), (o, fast)]
            ratios = [ours / a for ours, a in pairs if ours is not None and a is not None]
            out.append(f"| {enc.split('_')[0]} {corpus} | {_cell(o, base)} | {_cell(o_np, base)} | "
                       f"{_cell(base, None)} | {_cell(giga, base)} | {_cell(fast, base)} | "
                       f"{f'{min(ratios):.2f}' if ratios else 'n/a'} |")
    out.append("")
    out += ["### 2 threads, ~1.5 KB documents (MB/s; ours: encode_arrow, fastokens: encode_batch_flat)", "",
            "| | tltok_jit | tiktoken | gigatoken | fastokens | ours / best anchor |", "|---|---:|---:|---:|---:|---:|"]
    for enc in ENCODINGS:
        for corpus in CORPORA:
            base = mbps("batch", "tiktoken", enc, corpus, 2)
            o = mbps("batch", "tltok_jit[arrow]", enc, corpus, 2)
            an = [mbps("batch", lib, enc, corpus, 2) for lib in ANCHORS]
            out.append(f"| {enc.split('_')[0]} {corpus} | {_cell(o, base)} | {_cell(base, None)} | "
                       f"{' | '.join(_cell(a, base) for a in an)} | {_ours_over_best(o, an)} |")
    out.append("")
    out += ["### 20-character strings, one call each (thousands of calls a second, `encode_ordinary`)", "",
            "| | tltok_jit | tiktoken | gigatoken | fastokens | ours / best anchor |", "|---|---:|---:|---:|---:|---:|"]
    for enc in ENCODINGS:
        base = mbps("short_loop", "tiktoken", enc, "short-strings", 1)
        o = mbps("short_loop", "tltok_jit", enc, "short-strings", 1)
        an = [mbps("short_loop", lib, enc, "short-strings", 1) for lib in ANCHORS]
        out.append(f"| {enc.split('_')[0]} | {_cell(o, base)} | {_cell(base, None)} | "
                   f"{' | '.join(_cell(a, base) for a in an)} | {_ours_over_best(o, an)} |")
    return out + [""]


def hf_table(rows: list[dict]) -> list[str]:
    def mbps(lib, model, corpus, mode, threads):
        for r in rows:
            if (r["lib"], r["model"], r["corpus"], r["mode"], r["threads"]) == (lib, model, corpus, mode, threads):
                if "error" not in r and r.get("exact") is not False:
                    return r["bytes"] / r["wall"] / 1e6
        return None

    libs = ("tltok_jit", *HF_ANCHORS)
    out = ["### tokenizer.json models (MB/s, " + " / ".join(HF_CORPORA) + ")", "",
           "| | " + " | ".join(HF_LABELS.get(lib, lib) for lib in libs) + " | ours / best anchor |",
           "|---|" + "---:|" * (len(libs) + 1)]
    for model in HF_MODELS:
        for label, mode, threads in (("1 thread, whole text", "whole", 1), ("2 threads, documents", "batch", 2)):
            cells = {lib: [mbps(lib, model, c, mode, threads) for c in HF_CORPORA] for lib in libs}
            ratio = [_ours_over_best(cells["tltok_jit"][i], [cells[lib][i] for lib in HF_ANCHORS])
                     for i in range(len(HF_CORPORA))]
            out.append(f"| {model}, {label} | " + " | ".join(" / ".join(_cell(v, None) for v in cells[lib])
                                                         for lib in libs) + f" | {' / '.join(ratio)} |")
    return out + [""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="best of N fresh processes per number")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "speed-tables.md"))
    ap.add_argument("--render", action="store_true", help="only print the tables again from the JSON of an earlier run")
    ap.add_argument("--tables", default="tiktoken,hf",
                    help="tiktoken (tables 1-3), hf (table 4, tokenizer.json models) or both (default)")
    ap.add_argument("--rc3-python", default="", metavar="PYTHON",
                    help="interpreter with tokenizers==1.0.0rc3 for the hf-rc3 anchor of table 4 (bench_hf.py)")
    a = ap.parse_args(argv)
    tables = {t for t in a.tables.split(",") if t}
    if not tables or tables - {"tiktoken", "hf"}:
        ap.error(f"--tables: tiktoken, hf or both (got {a.tables!r})")
    out = Path(a.out)
    tik_md = out.with_name(out.stem + "-tiktoken.md")
    hf_md = out.with_name(out.stem + "-hf.md")
    if not a.render:
        run_all(a.repeat, tik_md if "tiktoken" in tables else None, hf_md if "hf" in tables else None,
                a.rc3_python)
    body, names = [], []
    if "tiktoken" in tables:
        body += tiktoken_tables(json.loads(tik_md.with_suffix(".json").read_text())["rows"])
        names.append(tik_md.name)
    if "hf" in tables:
        body += hf_table(json.loads(hf_md.with_suffix(".json").read_text())["rows"])
        names.append(hf_md.name)
    cmd = " ".join(["python bench/speed_tables.py", *(argv if argv is not None else sys.argv[1:])])
    text = "\n".join(["# Speed tables", "", f"`{cmd}`; rows: " + ", ".join(f"`{n}`" for n in names)
                      + " (and their .json)", "", *body])
    out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


def run_all(repeat: int, tik_md: Path | None, hf_md: Path | None, rc3_python: str = "") -> None:
    """bench/run.py and bench/bench_hf.py with the tables' settings, their rows written to tik_md / hf_md
    (a table whose path is None is not run)."""
    if tik_md is not None:
        run.main(["--libs", "tiktoken,tltok_jit,tltok_jit[arrow],tltok_jit[numpy],gigatoken,fastokens",
                  "--modes", "whole,batch,short",
                  "--encodings", ",".join(ENCODINGS), "--corpora", ",".join(CORPORA), "--threads", "2",
                  "--repeat", str(repeat), "--out", str(tik_md)])
    if hf_md is not None:
        bench_hf.main(["--models", ",".join(HF_MODELS), "--corpora", ",".join(HF_CORPORA), "--modes", "whole,batch",
                       "--threads", "2", "--libs", ",".join(("tltok_jit", *HF_ANCHORS)), "--repeat", str(repeat),
                       *(["--rc3-python", rc3_python] if rc3_python else []), "--out", str(hf_md)])


if __name__ == "__main__":
    sys.exit(main())
