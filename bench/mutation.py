"""Mutation testing of the merge, scanner and character-route kernels: which planted bugs does the suite catch?

A dev tool, run by hand (slow: numba recompiles the mutated module for every mutant), never in CI.
Results: bench/results/mutation.md.

    pip install "mutmut[patch]==2.5.1"     # not a project dependency
    python bench/mutation.py merge         # default functions of kernels/merge.py, tests/test_merge.py
    python bench/mutation.py scan          # default functions of kernels/scan.py, tests/test_scanners.py
    python bench/mutation.py chars         # kernels/merge_chars.py and kernels/trees.py, see MODULES
    python bench/mutation.py merge --functions merge_linear,_sift_down
    python bench/mutation.py report        # counts per module and function from .mutmut-cache
    python bench/mutation.py scan --rerun 19,71 --timeout 180   # test these mutant ids (mutmut show ID) again

Why mutmut 2.5: mutmut 3 plants no mutant in these modules, because it skips every decorated
function and every kernel is `@njit`. mutmut 2 rewrites the source file in place for each mutant
(keeping `<file>.bak`) and runs a test command, so the decorated kernels are compiled as mutated.

Which lines: `--use-patch-file` restricts mutmut to the lines a patch adds; this script writes a
patch that "adds" the body lines of the chosen functions (mutating a whole module is ~1,500
mutants at 5-25 s each).

The test command (this script with --run-tests): pytest -x on the module's test file, with a
separate NUMBA_CACHE_DIR. numba's cache is keyed by each source file's content hash, so the mutated
module is recompiled; a kernel of ANOTHER module that inlines a mutated function would load stale
from the cache, so for `merge` the tests that go through encode.py are deselected. `chars` instead
names the modules whose cached kernels cannot hold its code (`keep_cache`) and deletes every other
cache entry before each test run: merge_by_chars and compat_fast are compiled into the kernels of
encode.py, encode_chars.py and stream_encode.py, which are then compiled afresh with the mutant. A run longer than
--timeout seconds (a mutant that loops forever) or one that crashes is reported to mutmut as a
failure (mutmut 2 counts only exit code 1 as killed) and logged to .mutmut-timeouts; `report`
lists those as timeout / crash instead of killed. `--rerun` tests mutants again (a run stretched by
other load on the machine past --timeout is not a hang): it marks them untested, drops their entries
from .mutmut-timeouts and runs `mutmut run ID` for each.
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

# module -> "files": {source file: default functions to mutate}, "tests": pytest arguments, and
# optionally "keep_cache": the kernel modules whose numba cache entries may be reused across mutants
# (every other entry is deleted before each test run, see the docstring).
MODULES = {
    "merge": {
        # every merge of a piece shorter than LONG_PIECE symbols goes through these
        "files": {"tltok_jit/kernels/merge.py": ["_pair", "merge_linear", "_heap_push", "_sift_down", "merge_heap",
                                                 "merge_symbols"]},
        "tests": ["tests/test_merge.py", "-k", "not test_encode_long_piece"],
    },
    "scan": {
        # the o200k scanner (GPT-4o) and every helper it uses
        "files": {"tltok_jit/kernels/scan.py": ["_class", "_in", "_run", "_run_max", "_crlf_slash_tail",
                                                "_contraction_ci", "_ws_scan", "_ws_lookahead", "_cased_word",
                                                "_o200k_word", "scan_o200k"]},
        "tests": ["tests/test_scanners.py"],
    },
    "chars": {
        # the character route (pieces of multi-byte characters) and the tables behind its proof
        "files": {"tltok_jit/kernels/merge_chars.py": ["merge_by_chars"],
                  "tltok_jit/kernels/trees.py": ["boundary_flags", "char_bpe_table", "compat_fast"]},
        # all of test_merge_chars.py (-k also matches the module name), and from test_stream_encode.py the
        # compat_fast check and the character-by-character stream test (three vocabularies each)
        "tests": ["tests/test_merge_chars.py", "tests/test_stream_encode.py", "-k",
                  "fast_pair or merge_chars or char"],
        # imports neither trees.py nor merge_chars.py (encode, encode_chars, stream_encode do)
        "keep_cache": ["cache", "decode", "hashing", "merge", "scan", "stream_decode", "utf8"],
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


def patch_text(rel: str, lines: set[int]) -> str:
    new = (ROOT / rel).read_text(encoding="utf-8").splitlines(keepends=True)
    old = [s for i, s in enumerate(new, 1) if i not in lines]
    return "".join(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}"))


def _log_mutant(module: str, what: str) -> None:
    """Append the current mutant (the diff of the file against mutmut's .bak) to TIMEOUT_LOG."""
    rels = list(MODULES[module]["files"])
    baks = [rel for rel in rels if (ROOT / (rel + ".bak")).exists()]
    diff = ""
    for rel in baks:  # mutmut mutates one file at a time: the one with a .bak
        src = ROOT / rel
        bak = src.with_name(src.name + ".bak")
        diff += "".join(difflib.unified_diff(bak.read_text().splitlines(True), src.read_text().splitlines(True),
                                             rel, rel, n=0))
    if not baks:
        diff = f"--- {rels[0]}\n(no .bak)\n"
    with open(TIMEOUT_LOG, "a", encoding="utf-8") as f:
        f.write(f"# {what}\n{diff}")


def _prune_cache(keep: list[str]) -> None:
    """Delete the numba cache entries (`<module>.<function>-<line>.*`) of every module not in `keep`."""
    cache = os.environ.get("NUMBA_CACHE_DIR")
    if not cache or not Path(cache).is_dir():
        return
    for f in Path(cache).rglob("*"):
        if f.is_file() and f.name.split(".", 1)[0] not in keep:
            f.unlink()


def run_tests(module: str, timeout: float) -> int:
    """The test command mutmut runs for each mutant. mutmut 2 counts ONLY exit code 1 as killed, so a
    hang or a crash (a mutant writing out of bounds: numba does not bounds-check) is mapped to 1 here,
    and logged."""
    m = MODULES[module]
    if "keep_cache" in m:
        _prune_cache(m["keep_cache"])
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


def _diff_lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines()
            if ln[:1] in "+-" and ln[1:].strip() and not ln.startswith(("+++", "---"))]


def forget(ids: list[int]) -> None:
    """Mark mutants untested in .mutmut-cache and drop their entries from TIMEOUT_LOG."""
    con = sqlite3.connect(ROOT / ".mutmut-cache")
    con.executemany("UPDATE Mutant SET status = 'untested' WHERE id = ?", [(i,) for i in ids])
    con.commit()
    mutants = []  # (file, 1-based line, diff lines)
    for i in ids:
        fname, ln = con.execute("SELECT s.filename, l.line_number FROM Mutant m JOIN Line l ON m.line = l.id "
                                "JOIN SourceFile s ON l.sourcefile = s.id WHERE m.id = ?", (i,)).fetchone()
        show = subprocess.run(["mutmut", "show", str(i)], cwd=ROOT, capture_output=True, text=True).stdout
        mutants.append((fname, ln + 1, _diff_lines(show)))
    if not TIMEOUT_LOG.exists():
        return
    entries = []
    for ln in TIMEOUT_LOG.read_text(encoding="utf-8").splitlines(keepends=True):
        if ln.startswith(("# timeout", "# exit code")) or not entries:
            entries.append([])
        entries[-1].append(ln)
    keep = []
    for e in entries:
        fname = next((x[4:].strip() for x in e if x.startswith("--- ")), None)
        line = next((int(x[4:].split()[0].split(",")[0]) for x in e if x.startswith("@@ -")), None)
        if (fname, line, _diff_lines("".join(e))) not in mutants:
            keep.append("".join(e))
    TIMEOUT_LOG.write_text("".join(keep), encoding="utf-8")


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
    for path in [p for m in MODULES.values() for p in m["files"]]:
        mine = [r for r in rows if r[0] == path]
        if not mine:
            continue
        src = (ROOT / path).read_text(encoding="utf-8")
        names = function_lines(ROOT / path, [n.name for n in ast.parse(src).body if isinstance(n, ast.FunctionDef)])
        per = {}
        for _, ln, _text, status in mine:  # mutmut stores 0-based line numbers
            per.setdefault(names.get(ln + 1, "?"), Counter())[status] += 1
        for (fname, ln, kind), k in odd.items():
            if fname == path:
                c = per.setdefault(names.get(ln, "?"), Counter())
                for _ in range(k):  # mutmut counted these as killed (exit code 1), slow ones as suspicious
                    c["ok_suspicious" if c["ok_suspicious"] > 0 else "ok_killed"] -= 1
                    c[kind] += 1
        total = sum(per.values(), Counter())
        print(f"\n{path}: {dict(total)}")
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
    ap.add_argument("--rerun", help="comma list of mutant ids to test again")
    ap.add_argument("--run-tests", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.module == "report":
        report()
        return 0
    if a.run_tests:
        return run_tests(a.module, a.timeout)
    m = MODULES[a.module]
    tmp = Path(tempfile.gettempdir())
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "tltok-mutation-numba"))
    runner = f"{sys.executable} {Path(__file__).resolve()} {a.module} --run-tests --timeout {a.timeout}"
    common = ["--paths-to-mutate", ",".join(m["files"]), "--tests-dir", "tests/", "--runner", runner,
              "--simple-output", "--no-progress"]
    if a.rerun:
        ids = [int(i) for i in a.rerun.split(",")]
        forget(ids)
        for i in ids:
            subprocess.run(["mutmut", "run", str(i), *common], cwd=ROOT, env=env)
        return 0
    chosen = a.functions.split(",") if a.functions else None
    text = ""
    for path, defaults in m["files"].items():
        if chosen is None:
            names = defaults
        else:
            src = (ROOT / path).read_text(encoding="utf-8")
            here = {n.name for n in ast.parse(src).body if isinstance(n, ast.FunctionDef)}
            names = [n for n in chosen if n in here]
        if names:
            text += patch_text(path, set(function_lines(ROOT / path, names)))
    if not text:
        raise SystemExit(f"no function {chosen} in {list(m['files'])}")
    patch = tmp / f"tltok-mutation-{a.module}.patch"
    patch.write_text(text, encoding="utf-8")
    cmd = ["mutmut", "run", *common, "--use-patch-file", str(patch)]
    print(" ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
