"""Compiling the kernels ahead of use, once per machine, without making anyone wait for it.

numba compiles a kernel the first time a process calls it and caches the machine code on disk
(`kernels.jit.KERNEL_CACHE_DIR`, one folder per package version and kernel sources). Compiling the
whole set takes minutes on a small machine, so the first process that needs kernels which are not
in the cache starts `python -m tltok_jit.compile.worker` in the background and, for tiktoken rank files
and byte-level tokenizer.json models, serves its calls from an exact Python encoder (`interim`,
`interim_hf`) until each stage is ready:

    single   load the tables; encode / decode one text
    hf       what only tokenizer.json models run: the text path around a normalizer or bytes the
             vocabulary lacks (byte-level models with neither need nothing more than the others)
    rows     encode_batch / encode_ordinary_batch (the parallel row kernels)
    arrow    encode_arrow / count_arrow / decode_arrow
    stream   the stream encoder and decoders

The worker compiles the stages the model that started it uses (`BASE_STAGES`, plus "hf" for a
tokenizer.json model that needs it), and that model's scanner. A model whose stages are ready
never waits for the others.

A stage is ready when its marker file exists in the cache folder; the worker writes it after the
stage's kernels are in the cache. One worker runs per cache folder at a time (an exclusive `flock`
on a lock file in it), so a pool of processes or the workers of a cluster node compile once; numba
writes each cache entry to a temporary file and renames it into place, so a process loading while
the worker writes sees the old or the new entry, never half of one.

`TLTOK_COMPILE=foreground` turns all of this off: every process compiles what it needs itself,
when it first needs it (the test suite does this, to test the kernels rather than the Python path).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time

from ..kernels import jit

STAGES = ("single", "hf", "rows", "arrow", "stream")
BASE_STAGES = ("single", "rows", "arrow", "stream")  # what every model's calls use: all but "hf"
_LOCK_NAME = "compile.lock"
LOG_NAME = "compile.log"
LOCK_FD_ENV = "TLTOK_WARM_LOCK_FD"  # the worker's inherited, already locked, lock file
SCANNER_ENV = "TLTOK_WARM_SCANNER"  # the pattern kind of the process that started the worker
STAGES_ENV = "TLTOK_WARM_STAGES"  # the stages it uses, comma-separated


def background_enabled() -> bool:
    """True unless the package's compiled kernels run here, TLTOK_COMPILE=foreground, or there is no
    writable kernel cache to share."""
    return jit.USER_CACHE and not jit.SHIPPED and os.environ.get("TLTOK_COMPILE", "background") != "foreground"


def state_dir() -> str:
    """Markers, lock and log of this installation's kernels (numba keeps the machine code of each
    package folder apart inside the cache folder, so two installations of one version do too)."""
    d = os.path.join(jit.KERNEL_CACHE_DIR, "state-" + hashlib.sha1(jit.PACKAGE_DIR.encode()).hexdigest()[:12])
    os.makedirs(d, exist_ok=True)
    return d


def _marker(stage: str) -> str:
    return os.path.join(state_dir(), f"ready-{stage}")


def stage_ready(stage: str) -> bool:
    """The kernels of `stage` are in the package or the cache (or no cache is writable, and each
    process compiles what it needs)."""
    return jit.SHIPPED or not jit.USER_CACHE or os.path.exists(_marker(stage))


def all_ready(stages=STAGES) -> bool:
    """Every stage of `stages` is ready."""
    return all(stage_ready(s) for s in stages)


def _try_lock():
    """An open file holding the exclusive compile lock, or None when another process holds it."""
    import fcntl

    f = open(os.path.join(state_dir(), _LOCK_NAME), "a+b")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return None
    return f


def worker_running() -> bool:
    """A process holds the compile lock (a worker is compiling)."""
    f = _try_lock()
    if f is None:
        return True
    f.close()
    return False


def worker_env() -> dict:
    """The compile worker's environment: foreground compiling, and this copy of the package first on
    its path (the copy whose kernel-source hash names the cache, also when it was put on sys.path
    by hand rather than installed)."""
    env = dict(os.environ)
    env["TLTOK_COMPILE"] = "foreground"
    here = os.path.dirname(jit.PACKAGE_DIR)  # the folder holding this copy of tltok_jit
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    return env


def start_background(pattern_kind: str | None = None, stages=BASE_STAGES) -> bool:
    """Start the compile worker unless all of `stages` are ready or a worker runs; True if one runs
    now. It compiles `stages` and the scanner of `pattern_kind` (tables.PATTERN_CODES).

    The lock is taken here and handed to the worker (the same open file), so there is no moment when
    the worker is starting and the lock looks free."""
    if all_ready(stages):
        return False
    lock = _try_lock()
    if lock is None:
        return True
    env = worker_env()
    env[LOCK_FD_ENV] = str(lock.fileno())
    env[STAGES_ENV] = ",".join(stages)
    if pattern_kind:
        env[SCANNER_ENV] = pattern_kind
    import subprocess  # here: a warm process never starts a worker (~10 ms of its import)

    try:
        with open(os.path.join(state_dir(), LOG_NAME), "ab") as log:
            subprocess.Popen([sys.executable, "-m", "tltok_jit.compile.worker"], stdin=subprocess.DEVNULL,
                             stdout=log, stderr=log, env=env, start_new_session=True,
                             pass_fds=(lock.fileno(),))
    finally:
        lock.close()
    return True


def wait_for(stage: str, poll: float = 0.2) -> bool:
    """Block until `stage` is ready; False when no worker is left to make it (compile it yourself)."""
    while not stage_ready(stage):
        if not worker_running():
            return stage_ready(stage)
        time.sleep(poll)
    return True


def stages_as_ready(stages=STAGES, poll: float = 0.2):
    """Yield each stage of `stages` as it becomes ready, until all are or no worker is left to make
    the rest."""
    left = [s for s in stages if not stage_ready(s)]
    while left:
        done = [s for s in left if stage_ready(s)]
        yield from done
        left = [s for s in left if s not in done]
        if left and not done:
            if not worker_running():
                yield from (s for s in left if stage_ready(s))
                return
            time.sleep(poll)


def mark_ready(stage: str, seconds: float) -> None:
    """Write `stage`'s marker (atomically: a reader never sees half of it)."""
    tmp = f"{_marker(stage)}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{seconds:.1f}\n")
    os.replace(tmp, _marker(stage))


def take_lock():
    """The compile lock for a worker (an open file; close it to release): the one its starter handed
    it, else taken now; None when another worker holds it."""
    fd = os.environ.pop(LOCK_FD_ENV, None)
    if fd is not None:
        return os.fdopen(int(fd), "a+b")
    return _try_lock()
