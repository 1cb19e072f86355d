"""Mutation testing of the merge and scanner kernels: which planted bugs does the suite catch?

A dev tool, run by hand (slow: numba recompiles the mutated module for every mutant), never in CI.
Results: bench/results/mutation.md.

    pip install "mutmut[patch]==2.5.1"     # not a project dependency
    python bench/mutation.py merge         # default functions of kernels/merge.py, tests/test_merge.py
    python bench/mutation.py scan          # default functions of kernels/scan.py, tests/test_scanners.py
    python bench/mutation.py merge --functions merge_linear,_sift_down
    python bench/mutation.py report        # counts per module and function from .mutmut-cache

Why mutmut 2.5: mutmut 3 plants no mutant in these modules, because it skips every decorated
function and every kernel is `@njit`. mutmut 2 rewrites the source file in place for each mutant
(keeping `<file>.bak`) and runs a test command, so the decorated kernels are compiled as mutated.

Which lines: `--use-patch-file` restricts mutmut to the lines a patch adds; this script writes a
patch that "adds" the body lines of the chosen functions (mutating a whole module is ~1,500
mutants at 5-25 s each).

The test command (this script with --run-tests): pytest -x on the module's test file, with a
separate NUMBA_CACHE_DIR. numba's cache is keyed by each source file's content hash, so the mutated
module is recompiled; a kernel of ANOTHER module that inlines a mutated function would load stale
from the cache, so the tests that go through encode.py are deselected. A run longer than
--timeout seconds (a mutant that loops forever) or one that crashes is reported to mutmut as a
failure (mutmut 2 counts only exit code 1 as killed) and logged to .mutmut-timeouts; `report`
lists those as timeout / crash instead of killed.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_LOG = ROOT / ".mutmut-timeouts"

MODULES = {
    "merge": {
        "path": "tltok_jit/kernels/merge.py",
        "tests": ["tests/test_merge.py", "-k", "not test_encode_long_piece"],
        # every merge of a piece shorter than LONG_PIECE symbols goes through these
        "functions": ["_pair", "merge_linear", "_heap_push", "_sift_down", "merge_heap", "merge_symbols"],
    },
    "scan": {
        "path": "tltok_jit/kernels/scan.py",
        "tests": ["tests/test_scanners.py"],
        # the o200k scanner (GPT-4o) and every helper it uses
        "functions": ["_class", "_in", "_run", "_run_max", "_crlf_slash_tail", "_contraction_ci", "_ws_scan",
                      "_ws_lookahead", "_cased_word", "_o200k_word", "scan_o200k"],
    },
}


def function_lines(path: Path, names: list[str]) -> dict[int, str]:
    """1-based line -> function name, for the body lines (docstring excluded) of top-level functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    missing = [n for n in names if n not in found]
    if missing:
        raise SystemExit(f"no top-level function {missing} in {path}")
    out = {}
    for name in names:
        body = found[name].body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1:
            body = body[1:]
        for ln in range(body[0].lineno, found[name].end_lineno + 1):
            out[ln] = name
    return out


def write_patch(rel: str, lines: set[int], dest: Path) -> None:
    new = (ROOT / rel).read_text(encoding="utf-8").splitlines(keepends=True)
    old = [s for i, s in enumerate(new, 1) if i not in lines]
    dest.write_text("".join(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}")), encoding="utf-8")


def _log_mutant(module: str, what: str) -> None:
    """Append the current mutant (the diff of the file against mutmut's .bak) to TIMEOUT_LOG."""
    src = ROOT / MODULES[module]["path"]
    bak = src.with_name(src.name + ".bak")
    rel = MODULES[module]["path"]
    diff = "".join(difflib.unified_diff(bak.read_text().splitlines(True), src.read_text().splitlines(True),
                                        rel, rel, n=0)) if bak.exists() else f"--- {rel}\n(no .bak)\n"
    with open(TIMEOUT_LOG, "a", encoding="utf-8") as f:
        f.write(f"# {what}\n{diff}")


def run_tests(module: str, timeout: float) -> int:
    """The test command mutmut runs for each mutant. mutmut 2 counts ONLY exit code 1 as killed, so a
    hang or a crash (a mutant writing out of bounds: numba does not bounds-check) is mapped to 1 here,
    and logged."""
    m = MODULES[module]
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--hypothesis-seed=0", *m["tests"]]
    try:
        rc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        _log_mutant(module, f"timeout > {timeout:.0f} s")
        return 1
    if rc not in (0, 1):
        _log_mutant(module, f"exit code {rc}")
        return 1
    return rc


def report() -> None:
    db = ROOT / ".mutmut-cache"
    if not db.exists():
        raise SystemExit("no .mutmut-cache here: run a module first")
    con = sqlite3.connect(db)
    rows = con.execute("SELECT s.filename, l.line_number, l.line, m.status FROM Mutant m JOIN Line l ON m.line = l.id "
                       "JOIN SourceFile s ON l.sourcefile = s.id").fetchall()
    odd = Counter()  # (file, 1-based line, "timeout" | "crash") -> mutants the test command ended / crashed on
    if TIMEOUT_LOG.exists():
        fname = kind = None
        for ln in TIMEOUT_LOG.read_text(encoding="utf-8").splitlines():
            if ln.startswith("# "):
                kind = "timeout" if ln.startswith("# timeout") else "crash"
            elif ln.startswith("--- "):
                fname = ln[4:].strip()
            elif ln.startswith("@@ -"):
                odd[(fname, int(ln[4:].split()[0].split(",")[0]), kind)] += 1
    for module, m in MODULES.items():
        mine = [r for r in rows if r[0] == m["path"]]
        if not mine:
            continue
        src = (ROOT / m["path"]).read_text(encoding="utf-8")
        names = function_lines(ROOT / m["path"], [n.name for n in ast.parse(src).body if isinstance(n, ast.FunctionDef)])
        per = {}
        for _, ln, _text, status in mine:  # mutmut stores 0-based line numbers
            per.setdefault(names.get(ln + 1, "?"), Counter())[status] += 1
        for (fname, ln, kind), k in odd.items():
            if fname == m["path"]:
                c = per.setdefault(names.get(ln, "?"), Counter())
                for _ in range(k):  # mutmut counted these as killed (exit code 1), slow ones as suspicious
                    c["ok_suspicious" if c["ok_suspicious"] > 0 else "ok_killed"] -= 1
                    c[kind] += 1
        total = sum(per.values(), Counter())
        print(f"\n{m['path']}: {dict(total)}")
        for fn, c in per.items():
            print(f"  {fn:18s} {dict(+c)}")
        for _, ln, text, status in sorted(mine, key=lambda r: r[1]):
            if status == "bad_survived":
                print(f"  survived: line {ln + 1}: {text.strip()}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("module", choices=[*MODULES, "report"])
    ap.add_argument("--functions", help="comma list of top-level functions to mutate (default: see MODULES)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per test run before it counts as a hang")
    ap.add_argument("--run-tests", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.module == "report":
        report()
        return 0
    if a.run_tests:
        return run_tests(a.module, a.timeout)
    m = MODULES[a.module]
    names = a.functions.split(",") if a.functions else m["functions"]
    lines = function_lines(ROOT / m["path"], names)
    tmp = Path(tempfile.gettempdir())
    patch = tmp / f"tltok-mutation-{a.module}.patch"
    write_patch(m["path"], set(lines), patch)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "tltok-mutation-numba"))
    runner = f"{sys.executable} {Path(__file__).resolve()} {a.module} --run-tests --timeout {a.timeout}"
    cmd = ["mutmut", "run", "--paths-to-mutate", m["path"], "--tests-dir", "tests/", "--runner", runner,
           "--use-patch-file", str(patch), "--simple-output", "--no-progress"]
    print(" ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
