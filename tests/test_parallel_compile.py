"""Processes compiling side by side share the work: each kernel is compiled once, by whichever
process reaches it first, and loaded by the others (kernels.jit._CompileLock); the compile worker's
parts walk every stage (warm_worker.PART_ORDERS)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tltok_jit.compile import background as warm, worker as warm_worker

_PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(warm.__file__)))

# A kernel module outside the package, compiled by two processes that start calling it at the same
# moment (a file barrier after their imports); each prints whether it compiled or loaded it.
_KERNEL_MODULE = '''
import numpy as np
from tltok_jit.kernels.jit import njit

@njit
def helper(x, k):
    s = 0
    for i in range(len(x)):
        if x[i] % 3 == k:
            s += x[i] * (i + 1)
        elif x[i] % 5 == 0:
            s -= i
    return s

@njit
def kernel(x):
    return helper(x, 0) + helper(x, 1) * 7 + helper(x, 2) * 13
'''

_RUNNER = '''
import os, sys, time
sys.path.insert(0, sys.argv[1])
from numba.core import event
compiled = []
class L(event.Listener):
    def on_start(self, ev): pass
    def on_end(self, ev): compiled.append(ev.data["dispatcher"].py_func.__name__)
event.register("numba:compile", L())
import numpy as np
import shared_kernels
me, other = sys.argv[2], sys.argv[3]
open(me, "w").close()
deadline = time.time() + 60
while not os.path.exists(other) and time.time() < deadline:
    time.sleep(0.001)
print(shared_kernels.kernel(np.arange(1000, dtype=np.int64)), ",".join(sorted(compiled)) or "-")
'''


def _expected() -> int:
    def helper(x, k):
        s = 0
        for i, v in enumerate(x):
            if v % 3 == k:
                s += v * (i + 1)
            elif v % 5 == 0:
                s -= i
        return s

    x = list(range(1000))
    return helper(x, 0) + helper(x, 1) * 7 + helper(x, 2) * 13


def test_two_processes_compile_each_kernel_once(tmp_path):
    mod = tmp_path / "mod"
    mod.mkdir()
    (mod / "shared_kernels.py").write_text(_KERNEL_MODULE)
    (tmp_path / "runner.py").write_text(_RUNNER)
    env = dict(os.environ, TLTOK_KERNEL_CACHE=str(tmp_path / "cache"), TLTOK_NO_SHIPPED_KERNELS="1",
               PYTHONPATH=os.pathsep.join(p for p in (_PKG_PARENT, os.environ.get("PYTHONPATH", "")) if p))
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("TLTOK_NO_CACHE", None)
    a, b = str(tmp_path / "ready-a"), str(tmp_path / "ready-b")
    procs = [subprocess.Popen([sys.executable, str(tmp_path / "runner.py"), str(mod), me, other], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for me, other in ((a, b), (b, a))]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        outs.append(out.split())
    assert [int(o[0]) for o in outs] == [_expected()] * 2
    compiled = [name for o in outs for name in o[1].split(",") if name != "-"]
    # without the lock both processes compile both kernels (they start together)
    assert sorted(compiled) == ["helper", "kernel"], outs
    assert len(list((tmp_path / "cache").rglob("locks/*"))) == 2


def test_part_orders_cover_every_stage():
    assert len(warm_worker.PART_ORDERS) >= 2
    for order in warm_worker.PART_ORDERS:
        assert sorted(order) == sorted(warm.STAGES)
    assert warm_worker.PART_ORDERS[0][0] != warm_worker.PART_ORDERS[1][0]


@pytest.mark.parametrize("value, cores, jobs", [("", 2, 2), ("", 1, 1), ("", 8, 2), ("1", 8, 1), ("2", 1, 2),
                                                ("0", 2, 2), ("x", 2, 2), ("9", 2, 2)])
def test_compile_jobs(monkeypatch, value, cores, jobs):
    monkeypatch.setenv(warm_worker.JOBS_ENV, value)
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    if value in ("0", "x"):  # a value it cannot use is named, not dropped silently
        with pytest.warns(UserWarning, match=warm_worker.JOBS_ENV):
            assert warm_worker.compile_jobs() == jobs
    else:
        assert warm_worker.compile_jobs() == jobs


def test_stages_as_ready_yields_each_once(monkeypatch):
    ready: set = set()
    order = iter(warm.STAGES[::-1])

    def stage_ready(s):
        return s in ready

    def sleep(_):
        ready.add(next(order))

    monkeypatch.setattr(warm, "stage_ready", stage_ready)
    monkeypatch.setattr(warm, "worker_running", lambda: True)
    monkeypatch.setattr(warm.time, "sleep", sleep)
    assert list(warm.stages_as_ready()) == list(warm.STAGES[::-1])


def test_stages_as_ready_stops_without_a_worker(monkeypatch):
    monkeypatch.setattr(warm, "stage_ready", lambda s: False)
    monkeypatch.setattr(warm, "worker_running", lambda: False)
    assert list(warm.stages_as_ready()) == []


def test_engine_args_have_the_types_the_kernels_pass(ours):
    """warm_engine compiles the variant every stage then loads: the argument types of the handle
    (tables and piece cache) and scratch a real Encoding hands its kernels."""
    import numba
    import numpy as np

    from tltok_jit.kernels.handle import handle_of
    from tltok_jit.kernels.handle_layout import HANDLE_LEN, handle_in
    from tltok_jit.kernels.jit import stack_array
    from tltok_jit.engine.text import read_only_view

    enc = ours("r50k_base")
    cache, work = enc.engine.serial_workspace()
    buf = read_only_view(np.frombuffer(b"hello", dtype=np.uint8))
    real = (buf, np.zeros(3, dtype=np.int64), 1, handle_of(enc.engine.tables, cache), np.empty(8, dtype=np.uint32),
            0, work[0])
    assert [numba.typeof(a) for a in warm_worker.engine_args()] == [numba.typeof(a) for a in real]
    # the handle a kernel writes in its own stack frame (rows, Arrow blocks, the stream encoder) has
    # the type of one made in Python: one variant of the engine
    @numba.njit
    def take(h):
        return h[0]

    @numba.njit
    def probe(T, cache):
        return take(handle_in(T, cache, stack_array(HANDLE_LEN, np.int64)))

    assert probe(enc.engine.tables, cache) == real[3][0]
    assert take.signatures == [(numba.typeof(real[3]),)]


@pytest.mark.parametrize(("value", "stages"), [
    (None, warm.BASE_STAGES), ("", warm.BASE_STAGES), ("stream,single", ("single", "stream")),
    ("single,rows,arrow,stream,hf", warm.STAGES), ("nonsense", warm.BASE_STAGES)])
def test_the_worker_compiles_the_stages_it_was_started_for(value, stages):
    assert warm_worker.requested_stages(value) == stages
    assert "hf" not in warm.BASE_STAGES and set(warm.BASE_STAGES) < set(warm.STAGES)


@pytest.mark.parametrize(("kind", "stand_in"), [("gpt2", "gpt2"), ("cl100k", "cl100k"), ("o200k", "o200k"),
                                                (None, "o200k"), ("llama3", "o200k"), ("gpt2_digits", "o200k")])
def test_the_stand_in_model_takes_a_rank_files_pattern(kind, stand_in):
    """A rank file's worker then compiles its scanner alone; other kinds' stand-in is o200k, whose
    pattern takes every path the stages compile (long rows cut, streams)."""
    from tltok_jit.model.patterns import KINDS, kind_of_pattern

    model = warm_worker.stand_in_model(kind)
    assert model.pattern_kind == stand_in == kind_of_pattern(model.pattern)
    assert KINDS[stand_in].column_cuts and KINDS[stand_in].streams
