"""Cold start: wall time to the first ids from an empty kernel cache, and warm-process start-up,
each case in a fresh process (fresh copy of the package, empty kernel cache, empty user cache).

    python bench/cold_start.py                     # all cases, table on stdout
    python bench/cold_start.py --out bench/results/cold_start.md
    python bench/cold_start.py --only llama3       # only these cases: o200k-first, o200k-cli, warmup,
                                                   # warm, llama3 (comma-separated)

Cases (o200k_base from the rank file in ../shared, and Llama-3's tokenizer.json):
  first encode   import tltok_jit; get_encoding("o200k_base").encode("hello")  (wall, in a new process)
  first CLI      tltok encode of a 10-row Parquet file
  warmup         tltok warmup (everything a tiktoken encoding uses), from an empty cache
  full speed     from the first call until the background worker has compiled every stage
  warm process   import + load + first encode with the cache filled, against tiktoken in the same run
  Llama-3        from_file(llama3/tokenizer.json).encode("hello"), then the first `tltok encode --tokenizer`
                 of the 10-row file, empty cache, then until the background worker is done; and
                 `tltok warmup --tokenizer llama3/tokenizer.json` from an empty cache
Each timed process's CPU time (user + system, its own and its waited-for children's; not the
background worker's, which runs in its own session) is in the notes.
A case never overlaps another's background worker: each waits for the previous worker to finish.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BENCH_SHARED") or REPO.parent / "shared")

_RSS = "import resource, sys; print('RSS_MB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, file=sys.stderr)"


def _fresh_package(root: Path) -> Path:
    dest = root / "pkg"
    shutil.copytree(REPO / "tltok_jit", dest / "tltok_jit", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _env(root: Path, pkg: Path) -> dict:
    env = dict(os.environ)
    for k in ("NUMBA_CACHE_DIR", "TLTOK_COMPILE", "TLTOK_NO_CACHE"):
        env.pop(k, None)
    env.update(PYTHONPATH=str(pkg), TLTOK_KERNEL_CACHE=str(root / "kernels"), XDG_CACHE_HOME=str(root / "xdg"),
               TLTOK_CACHE_DIR=str(root / "user-cache"), TLTOK_DATA=str(SHARED / "tokenizers"),
               TIKTOKEN_CACHE_DIR="", PYTHONDONTWRITEBYTECODE="")
    return env


_LAST_CPU = [0.0]  # CPU seconds of the last _run


def _run(args: list[str], env: dict, cwd: Path) -> tuple[float, float, str]:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    _LAST_CPU[0] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode != 0:
        raise RuntimeError(f"{args} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    rss = 0.0
    for line in p.stderr.splitlines():
        if line.startswith("RSS_MB"):
            rss = float(line.split()[1])
    return wall, rss, p.stdout + p.stderr


def _python(code: str, env: dict, cwd: Path) -> tuple[float, float, str]:
    return _run([sys.executable, "-c", code + "\n" + _RSS], env, cwd)


def _cli(cli_args: list[str], env: dict, cwd: Path) -> tuple[float, float, str]:
    code = f"import sys; from tltok_jit.cli import main; rc = main({cli_args!r})\n{_RSS}\nsys.exit(rc)"
    return _run([sys.executable, "-c", code], env, cwd)


def _worker_done(root: Path, timeout: float = 1800.0) -> float:
    """Seconds until no compile worker holds a lock under root/kernels (0 when none ran)."""
    import fcntl

    t0 = time.perf_counter()
    locks = list((root / "kernels").glob("*/state-*/compile.lock"))
    for lock in locks:
        with open(lock, "a+b") as f:
            while True:
                try:
                    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(f.fileno(), fcntl.LOCK_UN)
                    break
                except OSError:
                    if time.perf_counter() - t0 > timeout:
                        raise TimeoutError("the compile worker did not finish") from None
                    time.sleep(0.5)
    return time.perf_counter() - t0


def _sample_parquet(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = [p.read_text()[:5000] for p in sorted((SHARED / "corpora" / "udhr").glob("*.txt"))[:10]]
    pq.write_table(pa.table({"text": texts}), path)


def _tiktoken_start(env: dict, cwd: Path) -> tuple[float, float]:
    """tiktoken's o200k_base built from the same local rank file (its own loader downloads)."""
    sys.path.insert(0, str(REPO))
    from tltok_jit.patterns import O200K_PATTERN

    code = (
        "import tiktoken, tiktoken.load\n"
        f"ranks = tiktoken.load.load_tiktoken_bpe({str(SHARED / 'tokenizers/tiktoken/o200k_base.tiktoken')!r})\n"
        f"enc = tiktoken.Encoding('o200k_base', pat_str={O200K_PATTERN!r}, mergeable_ranks=ranks, "
        "special_tokens={'<|endoftext|>': 199999, '<|endofprompt|>': 200018})\n"
        "enc.encode('hello')\n"
    )
    wall, rss, _ = _python(code, env, cwd)
    return wall, rss


CASES = ("o200k-first", "o200k-cli", "warmup", "warm", "llama3", "llama3-warmup")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the table (markdown) and a JSON beside it")
    ap.add_argument("--skip-llama3", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated cases to run: " + ", ".join(CASES))
    ap.add_argument("--repeat-warm", type=int, default=3, help="warm-process runs (median)")
    a = ap.parse_args(argv)
    only = set(filter(None, a.only.split(",")))
    if only - set(CASES):
        ap.error(f"--only: unknown case(s) {sorted(only - set(CASES))}; known: {', '.join(CASES)}")
    if "warm" in only:
        only.add("warmup")  # the warm process runs on warmup's cache
    run = (lambda c: c in only) if only else (lambda c: not c.startswith("llama3") or not a.skip_llama3)
    rows: list[tuple[str, str, str]] = []
    raw: dict = {}

    def case(label: str, seconds: float, note: str = "", cpu: bool = True) -> None:
        if cpu:
            note = f"CPU {_LAST_CPU[0]:.1f} s; " + note
        rows.append((label, f"{seconds:.1f} s", note))
        raw[label] = {"seconds": round(seconds, 2), "note": note}
        print(f"{label}: {seconds:.1f} s {note}", file=sys.stderr, flush=True)

    llama = SHARED / "tokenizers" / "llama3" / "tokenizer.json"
    with tempfile.TemporaryDirectory(prefix="tltok-cold-") as tmp:
        tmp = Path(tmp)
        sample = tmp / "sample10.parquet"
        _sample_parquet(sample)

        # 1. first encode, empty cache; then the time until the background worker is done
        if run("o200k-first"):
            root = tmp / "c1"
            pkg = _fresh_package(root)
            env = _env(root, pkg)
            code = ("import time; t0 = time.perf_counter(); import tltok_jit\n"
                    "enc = tltok_jit.get_encoding('o200k_base'); ids = enc.encode('hello')\n"
                    "print('STATE', enc.compile_state, ids, time.perf_counter() - t0)")
            t_first = time.perf_counter()
            wall, rss, out = _python(code, env, tmp)
            state = out.split("STATE ", 1)[1].split()[0]
            case("o200k: first encode, empty cache", wall, f"answered by: {state}; peak RSS {rss:.0f} MB")
            _worker_done(root)
            case("o200k: until every kernel is compiled (background)", time.perf_counter() - t_first,
                 "first call -> worker done", cpu=False)

        # 2. first CLI run, empty cache
        if run("o200k-cli"):
            root = tmp / "c2"
            pkg = _fresh_package(root)
            env = _env(root, pkg)
            wall, rss, out = _cli(["encode", str(sample), "-o", str(tmp / "o2.parquet"), "--encoding", "o200k_base"],
                                  env, tmp)
            case("o200k: first `tltok encode` (10 rows), empty cache", wall, f"peak RSS {rss:.0f} MB")
            _worker_done(root)

        # 3. tltok warmup, empty cache
        if run("warmup"):
            root = tmp / "c3"
            pkg = _fresh_package(root)
            env = _env(root, pkg)
            wall, rss, out = _cli(["warmup", "--encoding", "o200k_base"], env, tmp)
            case("o200k: `tltok warmup`, empty cache", wall, f"peak RSS {rss:.0f} MB")

        # 4. warm process (cache of case 3) against tiktoken
        if run("warm"):
            ours, ours_rss, theirs, theirs_rss = [], [], [], []
            for _ in range(a.repeat_warm):
                w, r, _o = _python("import tltok_jit; tltok_jit.get_encoding('o200k_base').encode('hello')", env, tmp)
                ours.append(w)
                ours_rss.append(r)
                w, r = _tiktoken_start(env, tmp)
                theirs.append(w)
                theirs_rss.append(r)
            med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
            case("o200k: warm process (import + load + encode)", med(ours),
                 f"median of {a.repeat_warm}: {med(ours):.3f} s, tiktoken {med(theirs):.3f} s; median of the paired "
                 f"ratios {med([x / y for x, y in zip(ours, theirs)]):.3f}; peak RSS {med(ours_rss):.0f} MB vs "
                 f"tiktoken {med(theirs_rss):.0f} MB",
                 cpu=False)
            raw["warm"] = {"ours_s": ours, "tiktoken_s": theirs, "ours_rss_mb": ours_rss, "tiktoken_rss_mb": theirs_rss}

        if run("llama3") and llama.is_file():
            root = tmp / "c5"
            pkg = _fresh_package(root)
            env = _env(root, pkg)
            code = (f"import tltok_jit; enc = tltok_jit.from_file({str(llama)!r}); ids = enc.encode('hello')\n"
                    "print('STATE', enc.compile_state)")
            t_first = time.perf_counter()
            wall, rss, out = _python(code, env, tmp)
            state = out.split("STATE ", 1)[1].split()[0]
            case("Llama-3: first encode, empty cache", wall, f"answered by: {state}; peak RSS {rss:.0f} MB")
            wall, rss, _o = _cli(["encode", str(sample), "-o", str(tmp / "o5.parquet"), "--tokenizer", str(llama)],
                                 env, tmp)
            case("Llama-3: then `tltok encode` (10 rows)", wall,
                 f"same cache as the line above; peak RSS {rss:.0f} MB")
            _worker_done(root)
            case("Llama-3: until every kernel is compiled (background)", time.perf_counter() - t_first,
                 "first call -> worker done", cpu=False)

        if run("llama3-warmup") and llama.is_file():
            root = tmp / "c6"
            pkg = _fresh_package(root)
            env = _env(root, pkg)
            wall, rss, _o = _cli(["warmup", "--tokenizer", str(llama)], env, tmp)
            case("Llama-3: `tltok warmup --tokenizer`, empty cache", wall, f"peak RSS {rss:.0f} MB")

    table = ["| case | wall | notes |", "|---|---:|---|"] + [f"| {a_} | {b} | {c} |" for a_, b, c in rows]
    text = "\n".join(table)
    print(text)
    if a.out:
        Path(a.out).write_text(f"# Cold start (bench/cold_start.py, {time.strftime('%Y-%m-%d')}, "
                               f"{os.cpu_count()} cores)\n\n{text}\n")
        Path(a.out).with_suffix(".json").write_text(json.dumps(raw, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
