"""What the side-by-side suites share: a fresh pinned process per number, the best of N, and the
header every results file starts with (date, commit, versions, load).

A suite's script is both the driver and the worker: `run_one(__file__, spec)` starts
`python SCRIPT --worker SPEC`, whose `main` calls `serve_worker(spec, worker)` first thing."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def serve_worker(spec_json: str, worker: Callable[[dict], dict]) -> int:
    """The worker side: pin to spec["threads"] CPUs before any library sizes a pool from the CPU
    count, run `worker(spec)`, print its result as one JSON line."""
    spec = json.loads(spec_json)
    try:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:max(int(spec.get("threads", 1)), 1)])
    except (AttributeError, OSError):
        pass
    print(json.dumps(worker(spec)))
    return 0


def run_one(script: str, spec: dict, timeout: float) -> dict:
    """One number: `script --worker spec` in a fresh process with every library's thread count set
    to spec["threads"], compiled kernels only (never the Python encoder that answers meanwhile)."""
    threads = int(spec.get("threads", 1))
    env = dict(os.environ)
    env["RAYON_NUM_THREADS"] = str(threads)
    env["NUMBA_NUM_THREADS"] = str(threads)
    env["TOKENIZERS_PARALLELISM"] = "true" if threads > 1 else "false"
    env["TLTOK_COMPILE"] = "foreground"
    p = subprocess.run([sys.executable, script, "--worker", json.dumps(spec)], capture_output=True, text=True,
                       env=env, timeout=timeout, cwd=str(REPO))
    if p.returncode != 0:
        return {**spec, "error": ((p.stderr or p.stdout).strip().splitlines() or ["failed"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def best_of(script: str, spec: dict, repeat: int, timeout: float, key: str = "wall") -> dict:
    """The fastest of `repeat` fresh processes (lowest `key`), or the first error."""
    best = None
    for _ in range(repeat):
        r = run_one(script, spec, timeout)
        if "error" in r:
            return r
        if best is None or r[key] < best[key]:
            best = r
    return best


def known_libs(requested: str, libs: Iterable[str]) -> list[str] | None:
    """The comma-separated `requested` libraries, or None (after saying which are unknown)."""
    libs = list(libs)
    asked = [x for x in requested.split(",") if x]
    unknown = sorted(set(asked) - set(libs))
    if unknown:
        print(f"--libs: unknown {unknown}; known: {', '.join(libs)}", file=sys.stderr)
        return None
    return asked


class Run:
    """The start of a run: when, and the machine's load then (`header` adds the commit and versions)."""

    def __init__(self):
        self.load0 = os.getloadavg()
        self.started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())

    def header(self, title: str, dists: Iterable[str], command: str) -> list[str]:
        """A results file's first lines: title, date, commit, versions, load at start and end, command."""
        import importlib.metadata as md

        versions = {}
        for dist in dists:
            try:
                versions[dist] = md.version(dist)
            except md.PackageNotFoundError:
                pass
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=str(REPO)).stdout.strip()
        self.commit, self.versions = commit, versions
        return [
            f"# {title}",
            "",
            f"- date: {self.started}; commit {commit}; Python {platform.python_version()}; {os.cpu_count()} CPUs; "
            "versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()),
            f"- load average (1/5/15 min) at start {tuple(round(x, 2) for x in self.load0)}, at end "
            f"{tuple(round(x, 2) for x in os.getloadavg())} (a shared machine: cpuMB/s is the steadier figure)",
            f"- command: `{command}`",
        ]


def lib_matrix(script: str, libs: list[str], corpora: str, threads: str, repeat: int, timeout: float) -> list[dict]:
    """best_of for every corpus x thread count x lib (comma-separated corpora and thread counts), a
    line on stderr per number; the rows in that order."""
    rows: list[dict] = []
    for corpus in corpora.split(","):
        for thr in (int(x) for x in threads.split(",")):
            for lib in libs:
                best = best_of(script, {"lib": lib, "corpus": corpus, "threads": thr}, repeat, timeout)
                rows.append(best)
                msg = best.get("error") or (f"{best['bytes'] / best['wall'] / 1e6:.1f} MB/s "
                                            f"({best['bytes'] / max(best['cpu'], 1e-9) / 1e6:.1f} cpuMB/s)")
                print(f"{lib:11s} {corpus}/t{thr}: {msg}", file=sys.stderr, flush=True)
    return rows


def ratio_table(rows: list[dict], ref_name: Callable[[dict], str], ref_label: str) -> str:
    """Markdown: MB/s and CPU MB/s of every row, its speed-up over the row of lib `ref_name(row)` with
    the same corpus and threads (wall and CPU), and whether its ids' hash equals that row's."""
    lines = [f"| corpus | thr | lib | MB/s | cpuMB/s | x {ref_label} (wall) | x {ref_label} (cpu) | exact |",
             "|---|---:|---|---:|---:|---:|---:|---|"]
    for r in rows:
        head = f"| {r['corpus']} | {r['threads']} | {r['lib']} |"
        if "error" in r:
            lines.append(f"{head} error: {r['error']} | | | | |")
            continue
        want = ref_name(r)
        ref = next((x for x in rows if x["lib"] == want and "wall" in x and x["corpus"] == r["corpus"]
                    and x["threads"] == r["threads"]), None)
        ratio = f"{ref['wall'] / r['wall']:.1f}x" if ref else ""
        cratio = f"{ref['cpu'] / max(r['cpu'], 1e-9):.1f}x" if ref else ""
        exact = "yes" if ref and r["sha"] == ref["sha"] else ("NO" if ref else "")
        lines.append(f"{head} {r['bytes'] / r['wall'] / 1e6:.1f} | {r['bytes'] / max(r['cpu'], 1e-9) / 1e6:.1f} | "
                     f"{ratio} | {cratio} | {exact} |")
    return "\n".join(lines)
