"""First use on a machine whose kernel cache is empty, in real processes: the first ids come at once
from the Python encoder, one background worker compiles the kernels (however many processes start
together), and later processes load them from the cache. Also: where the cache lives."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

FIRST_USE = """
import json, sys, time
t0 = time.perf_counter()
import tltok_jit
enc = tltok_jit.get_encoding("r50k_base")
ids = enc.encode("hello world, first use")
print(json.dumps({"state": enc.compile_state, "ids": ids, "seconds": time.perf_counter() - t0}))
"""


def _env(tmp_path: Path) -> dict:
    env = dict(os.environ)
    for k in ("TLTOK_COMPILE", "NUMBA_CACHE_DIR", "TLTOK_NO_CACHE"):
        env.pop(k, None)
    env["TLTOK_KERNEL_CACHE"] = str(tmp_path / "kernels")
    env["TLTOK_NO_SHIPPED_KERNELS"] = "1"  # the path of an installation without (usable) compiled kernels
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _first_use(env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", FIRST_USE], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _locked(lock: Path) -> bool:
    """A process holds the exclusive lock on `lock` (the compile worker runs)."""
    import fcntl

    with open(lock, "a+b") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        return False


def _cache_dir(tmp_path: Path) -> Path:
    """The state folder (markers, lock, log) of the one installation used here."""
    dirs = list((tmp_path / "kernels").glob("*/state-*"))
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_cache_lives_in_the_user_cache_folder_keyed_by_sources():
    from tltok_jit.kernels import jit

    assert jit.KERNEL_CACHE_DIR.startswith(jit.kernel_cache_root())
    version, digest = os.path.basename(jit.KERNEL_CACHE_DIR).split("-")
    import tltok_jit

    assert version == tltok_jit.__version__ and len(digest) == 12
    assert not jit.KERNEL_CACHE_DIR.startswith(jit.PACKAGE_DIR)


def test_source_hash_changes_with_any_kernel_source(tmp_path):
    from tltok_jit.kernels import numba_cache

    import shutil

    copy = tmp_path / "tltok_jit"
    shutil.copytree(numba_cache.PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = numba_cache.kernel_source_hash(str(copy))
    (copy / "integrations" / "cli.py").write_text((copy / "integrations" / "cli.py").read_text() + "\n# not a kernel source\n")
    assert numba_cache.kernel_source_hash(str(copy)) == before
    helper = copy / "kernels" / "hashing.py"
    helper.write_text(helper.read_text() + "\n# an edited helper\n")
    assert numba_cache.kernel_source_hash(str(copy)) != before


def test_prune_keeps_the_newest(tmp_path, monkeypatch):
    from tltok_jit.kernels import jit

    monkeypatch.setenv("TLTOK_KERNEL_CACHE", str(tmp_path))
    for i in range(6):
        d = tmp_path / f"0.0.{i}-abc"
        d.mkdir()
        os.utime(d, (1000 + i, 1000 + i))
    removed = jit.prune_kernel_caches(keep=3)
    assert sorted(os.path.basename(p) for p in removed) == ["0.0.0-abc", "0.0.1-abc", "0.0.2-abc"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.0.3-abc", "0.0.4-abc", "0.0.5-abc"]


def test_first_use_answers_at_once_and_one_worker_compiles(tmp_path, tiktoken_oracle):
    oracle = tiktoken_oracle("r50k_base")
    env = _env(tmp_path)
    procs = [_first_use(env) for _ in range(3)]  # a pool starting together
    import json

    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        res = json.loads(out)
        assert res["state"] == "interim"
        assert res["ids"] == oracle.encode("hello world, first use")
        assert res["seconds"] < 15
    # the CLI says once that the kernels compile in the background, and its ids are exact
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = ["first use of the CLI", None, "日本語 🙂"]
    pq.write_table(pa.table({"text": texts}), tmp_path / "in.parquet")
    cli = subprocess.run([sys.executable, "-m", "tltok_jit.integrations.cli", "encode", str(tmp_path / "in.parquet"), "-o",
                          str(tmp_path / "out.parquet"), "--encoding", "r50k_base"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert cli.stderr.count("compiling in the background") == 1, cli.stderr
    got = pq.read_table(tmp_path / "out.parquet").column("tokens").to_pylist()
    assert got == [oracle.encode(texts[0]), None, oracle.encode(texts[2])]
    cache = _cache_dir(tmp_path)
    # exactly one worker compiles: the others saw the lock held
    workers = subprocess.run(["pgrep", "-f", "tltok_jit.compile.worker"], capture_output=True, text=True).stdout.split()
    mine = [w for w in workers if str(tmp_path) in Path(f"/proc/{w}/environ").read_bytes().decode(errors="replace")]
    helpers = [w for w in mine if b"--part" in Path(f"/proc/{w}/cmdline").read_bytes().split(b"\0")]
    assert len(mine) - len(helpers) <= 1  # its helpers (--part K) share the work, they do not repeat it
    deadline = time.monotonic() + 1800
    stages = ("single", "rows", "arrow", "stream")  # its parts finish them in no fixed order
    while not all((cache / f"ready-{stage}").exists() for stage in stages):
        assert time.monotonic() < deadline, (cache / "compile.log").read_text()
        if not _locked(cache / "compile.lock") and not all((cache / f"ready-{s}").exists() for s in stages):
            pytest.fail("the compile worker stopped before every stage was ready:\n"
                        + (cache / "compile.log").read_text()[-3000:])
        time.sleep(2)
    log = (cache / "compile.log").read_text()
    assert "compile part 0:" in log, log
    from tltok_jit.compile.worker import compile_jobs

    assert ("compile part 1: engine done" in log) == (compile_jobs() > 1), log
    # what a rank file never runs is not compiled: the tokenizer.json stage, the other patterns' scanners
    assert not (cache / "ready-hf").exists()
    scanners = {p.name.split("-")[0] for p in cache.parent.rglob("scan._entry_*.nbi")}
    assert scanners == {"scan._entry_gpt2"}, scanners  # r50k's (the stand-in model takes its pattern)
    p = _first_use(env)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    res = json.loads(out)
    assert res["state"] == "compiled" and res["ids"] == oracle.encode("hello world, first use")
    assert res["seconds"] < 15


def test_foreground_mode_never_starts_a_worker(tmp_path):
    env = _env(tmp_path)
    env["TLTOK_COMPILE"] = "foreground"
    code = "from tltok_jit.compile import background as warm; print(warm.background_enabled())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("mode", ["background", ""])
def test_background_is_the_default(tmp_path, mode):
    env = _env(tmp_path)
    if mode:
        env["TLTOK_COMPILE"] = mode
    code = "from tltok_jit.compile import background as warm; print(warm.background_enabled())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


WARM_USE = """
import json, sys
import llvmlite.binding as ll
import numpy as np
parsed = []
_parse = ll.parse_bitcode
ll.parse_bitcode = lambda data: parsed.append(len(data)) or _parse(data)
import tltok_jit
enc = tltok_jit.get_encoding("r50k_base")
ids = enc.encode("hello world, warm use")
batch = enc.encode_batch(["a b", "c d"] * 300, num_threads=2)
text = enc.decode(ids)
refreshed = "numba.np.polynomial" in sys.modules  # imported only by numba's registry refresh
n_parsed = len(parsed)
from tltok_jit.kernels.jit import njit
from tltok_jit.kernels.utf8 import str_utf8

@njit(cache=False)
def twice(a):  # a compile after the lean loads: numba refreshes the registries itself
    return np.sum(a) * 2

@njit(cache=False)
def utf8_len(s):  # links against a kernel loaded from the cache: its bitcode is read now
    return len(str_utf8(s)[0])

print(json.dumps({"ids": ids, "batch": batch[:2], "text": text, "refreshed": refreshed,
                  "compiled": int(twice(np.arange(4))), "refreshed_after": "numba.np.polynomial" in sys.modules,
                  "parsed_before": n_parsed, "linked": utf8_len("h\u00e9llo"), "parsed_after": len(parsed)}))
"""


def test_warm_process_loads_kernels_without_numbas_registry_refresh(tmp_path, tiktoken_oracle):
    oracle = tiktoken_oracle("r50k_base")
    env = _env(tmp_path)
    del env["TLTOK_KERNEL_CACHE"]  # the suite's own cache: the first run compiles what it lacks
    env["TLTOK_COMPILE"] = "foreground"
    subprocess.run([sys.executable, "-c", WARM_USE], env=env, capture_output=True, text=True, check=True)  # fills
    import json

    res = json.loads(subprocess.run([sys.executable, "-c", WARM_USE], env=env, capture_output=True, text=True,
                                    check=True).stdout)
    assert res["ids"] == oracle.encode("hello world, warm use") and res["text"] == "hello world, warm use"
    assert res["batch"] == [oracle.encode("a b"), oracle.encode("c d")]
    assert not res["refreshed"], "loading cached kernels refreshed numba's registries"
    assert res["compiled"] == 12 and res["refreshed_after"]
    # cached kernels load without parsing their bitcode (kernels/numba_cache.py: _lazy_state), which a
    # compile linking against one of them still gets
    assert res["parsed_before"] == 0
    assert res["linked"] == 6 and res["parsed_after"] > 0


def test_worker_imports_this_copy_of_the_package(tmp_path, monkeypatch):
    # a package put on sys.path by hand (no install, no PYTHONPATH) still gets a worker that finds it
    from tltok_jit.compile import background as warm

    monkeypatch.delenv("PYTHONPATH", raising=False)
    env = warm.worker_env()
    assert env["TLTOK_COMPILE"] == "foreground"
    # -S: no site-packages (no installed or editable copy), so only the worker's PYTHONPATH can find it
    code = "import importlib.util; print(importlib.util.find_spec('tltok_jit').origin)"
    out = subprocess.run([sys.executable, "-S", "-c", code], env=env, cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout
    assert Path(out.strip()).resolve() == (REPO / "tltok_jit" / "__init__.py").resolve()


NRT_USE = """
import glob, json, os
import numpy as np
from numba.core.registry import cpu_target
from tltok_jit.kernels.jit import KERNEL_CACHE_DIR, njit
from tltok_jit.kernels.numba_cache import initialize_runtime

initialize_runtime(cpu_target.target_context)  # as the first kernel a process loads does

@njit(cache=False)
def ones(n):
    return np.ones(n).sum()  # allocates: runs on numba's runtime (NRT)

total = float(ones(5))
files = glob.glob(os.path.join(KERNEL_CACHE_DIR, "nrt-*.pickle"))
print(json.dumps({"sum": total, "files": files, "sizes": [os.path.getsize(f) for f in files],
                  "mtimes": [os.stat(f).st_mtime_ns for f in files]}))
"""


def test_numba_runtime_kept_in_the_kernel_cache(tmp_path):
    """numba's runtime helpers are compiled once and kept in the kernel cache folder; a damaged copy
    is compiled again and replaced, never loaded."""
    import json

    env = _env(tmp_path)
    env["TLTOK_COMPILE"] = "foreground"

    def run():
        out = subprocess.run([sys.executable, "-c", NRT_USE], env=env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout)

    first = run()
    assert first["sum"] == 5.0 and len(first["files"]) == 1 and first["sizes"][0] > 1000
    assert str(tmp_path / "kernels") in first["files"][0]
    assert run() == first  # loaded, not rewritten
    Path(first["files"][0]).write_bytes(b"damaged")
    third = run()
    assert third["sum"] == 5.0 and third["files"] == first["files"] and third["sizes"][0] > 1000
