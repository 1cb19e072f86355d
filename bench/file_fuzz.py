"""Long runs of the tokenizer-file fuzzer (tests/file_fuzz.py): outcomes per file kind.

    python bench/file_fuzz.py --cases 20000 --seed 1             # writes bench/results/file-fuzz.md
    python bench/file_fuzz.py --cases 500 --seed 7 --no-full     # the small seeds only

Each case is one mutated file, loaded and exercised in a worker process (one at a time; a crash or
hang is recorded against its case and a new worker takes the next). Failed cases are listed in the
report with their mutation; `python tests/file_fuzz.py --replay INDEX --seed SEED [--full]` runs one
again and keeps its file.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import file_fuzz as F  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "file-fuzz.md"


def write_report(results: list[dict], seed_results: dict | None, args, seconds: float, command: str,
                 out: Path) -> None:
    table = F.summary(results)
    bad = F.failures(results)
    lines = [
        "# Tokenizer-file fuzzing: outcomes per file kind",
        "",
        f"Date: {datetime.date.today().isoformat()}. Command: `{command}`. {len(results)} cases in "
        f"{seconds:.0f} s (one worker process at a time), seed {args.seed}"
        + (", the full-size real files among the seeds." if args.full else ", the small seeds only."),
        "",
        "Outcomes (see tests/file_fuzz.py): `ok` loaded, every encode and decode ran; `refused` the load raised "
        "a TltokError subclass naming the file; `fail`, `crash`, `hang`: anything else.",
        "",
        "| file kind | cases | ok | refused | fail | crash | hang | refusing errors |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for kind in F.KINDS:
        c = table.get(kind)
        if not c:
            continue
        n = sum(v for k, v in c.items() if ":" not in k)
        errs = ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in sorted(c.items()) if k.startswith("refused:"))
        lines.append(f"| {kind} | {n} | {c['ok']} | {c['refused']} | {c['fail']} | {c['crash']} | {c['hang']} | "
                     f"{errs} |")
    seeds = ", ".join(f"{name} ({r['outcome']})" for name, r in (seed_results or {}).items())
    lines += ["", f"Seeds (each loaded unchanged first): {seeds}.", ""]
    if bad:
        lines += [f"## {len(bad)} failed cases", ""]
        for r in bad[:50]:
            lines.append(f"- case {r['index']} ({r.get('kind')} {r.get('seed')}: {r.get('mutation')}): {r['outcome']}, "
                         f"{r.get('why', '')} {r.get('error', '')} {r.get('message', '')[:200]}")
    else:
        lines.append("No case failed.")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first case number")
    ap.add_argument("--no-full", dest="full", action="store_false",
                    help="only the small seeds (not the full-size real files)")
    ap.add_argument("--timeout", type=float, default=F.CASE_TIMEOUT, help="seconds per case")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--json", type=Path, help="also write every case's outcome here")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="tltok-file-fuzz-"))
    seeds = F.prepare_seeds(work / "seeds", full=args.full)
    t0 = time.monotonic()
    done = [0]

    def progress(r):
        done[0] += 1
        if r["outcome"] not in ("ok", "refused"):
            print(F.format_failure(r)[:2000], flush=True)
        if done[0] % 1000 == 0:
            print(f"{done[0]} cases, {time.monotonic() - t0:.0f} s", flush=True)

    results, seed_results = F.run_cases(range(args.start, args.start + args.cases), seeds, args.seed, work,
                                        case_timeout=args.timeout, progress=progress)
    seconds = time.monotonic() - t0
    command = "python bench/file_fuzz.py " + " ".join(argv if argv is not None else sys.argv[1:])
    write_report(results, seed_results, args, seconds, command, args.out)
    if args.json:
        args.json.write_text(json.dumps(results))
    for kind, c in F.summary(results).items():
        print(kind, {k: v for k, v in c.items() if ":" not in k})
    print(f"wrote {args.out} (crash inputs, if any, kept in {work})")
    return 1 if F.failures(results) else 0


if __name__ == "__main__":
    sys.exit(main())
