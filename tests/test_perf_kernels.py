"""bench/perf_kernels.py names numba's mangled kernel symbols as module.function, reads perf's report,
and (where `perf` can sample here) profiles a real loop with the kernels named."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import perf_kernels  # noqa: E402


@pytest.mark.parametrize("symbol, name", [
    ("_ZN9tltok_jit7kernels5merge11merge_pieceB4v514B52c8tJTIeFIjxB2IKSgI4CrvSCKg1MMfAwK4LJISUWsIgmAA_3d_3dE5Array",
     "merge.merge_piece"),
    ("_ZN7cpython9tltok_jit7kernels6handle14encode_text_atB4v270B52c8tJTIeFIjxB2IKSgE5ArrayIhLi1E1C8readonly",
     "handle.encode_text_at"),
    ("cfunc._ZN9tltok_jit7kernels4scan12_entry_o200kB4v175B52c8tJTIeFIjxB2IKSgI4CrvQClUYkACQB1EiFSRRB9GgCAA_3d_3dE",
     "scan._entry_o200k"),
    ("_ZN9tltok_jit6pylist5_fillB2v1B40c8tJTIeFIjxB2IKSgI4CrvQClQZ6FcpCShpgEU0AEx5ArrayIjLi1E1C7mutable", "pylist._fill"),
    ("_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault"),
])
def test_readable_names(symbol, name):
    assert perf_kernels.readable(symbol) == name


def test_report_rows_are_read():
    report = """# Samples: 88K of event 'cpu-clock'
#
    19.88%  [.] _ZN9tltok_jit7kernels11merge_chars17merge_by_chars_atB4v427B52c8tJTIeFIjxB2E8uint8
     4.06%  [.] _PyEval_EvalFrameDefault
     0.91%  [k] exc_page_fault
"""
    rows = perf_kernels._functions(report)
    assert [(s, perf_kernels.readable(n)) for s, n in rows] == [
        (19.88, "merge_chars.merge_by_chars_at"), (4.06, "_PyEval_EvalFrameDefault"), (0.91, "exc_page_fault")]


def _perf_samples() -> bool:
    if shutil.which("perf") is None or shutil.which("objdump") is None:
        return False
    r = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"],
                       capture_output=True)
    return r.returncode == 0


@pytest.mark.skipif(not _perf_samples(), reason="needs perf allowed to sample here, and objdump")
def test_a_real_loop_is_profiled_with_the_kernels_named():
    r = subprocess.run([sys.executable, str(Path(perf_kernels.__file__)), "r50k_base", "code", "--calls", "20",
                        "--hot", "encode_ordinary_spans", "--top", "3"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    assert "| share of samples | function |" in r.stdout
    assert "encode.encode_ordinary_spans" in r.stdout  # the piece loop, named
    assert "hottest instructions" in r.stdout
