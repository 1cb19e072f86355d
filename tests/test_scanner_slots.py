"""The scanners behind their table of addresses (tltok_jit.kernels.scanner_slots).

A process loads the scanner of each pattern it uses and no other; a kernel that reaches a pattern
whose scanner is not loaded yet loads it through the slot's first-call callback, also when the
workers of a parallel kernel reach it at the same moment, and its ids are the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tltok_jit
from tltok_jit.kernels import scan, scanner_slots

REPO = Path(__file__).resolve().parents[1]
TEXTS = ["Hello world, it's 2024!\n", "  spaces   and\ttabs\r\n", "日本語のテキスト。", "don't 123456 x" * 40] * 8


def _run(code: str) -> object:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=1200, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


USE_O200K = """
import json, pyarrow as pa, tltok_jit
from tltok_jit.columns import arrow
from tltok_jit.kernels import scan
enc = tltok_jit.get_encoding("o200k_base")
enc.encode("hello world"); enc.encode("x" * 5000); enc.encode_batch(["a b", "c d"] * 50, num_threads=2)
arrow.encode_arrow(enc, pa.array(["a b", None, "c"]))
se = enc.stream_encoder(); se.feed("Hello wor"); se.finish()
print(json.dumps(scan.loaded_scanners()))
"""


def test_an_o200k_process_loads_the_o200k_scanner_and_no_other():
    assert _run(USE_O200K) == [scan.PAT_O200K]


# The engine's own load of its scanner switched off: the first piece a kernel scans goes through
# the slot's callback, from both workers of a 2-thread batch at once.
FIRST_CALL_IN_WORKERS = """
import json, tltok_jit
from tltok_jit.engine import core
from tltok_jit.kernels import scan
core.load_scanner = lambda kind: 0
enc = tltok_jit.get_encoding("r50k_base")
texts = json.loads({texts!r})
ids = enc.encode_ordinary_batch(texts, num_threads=2)
print(json.dumps([ids, scan.loaded_scanners()]))
"""


def test_a_kernel_loads_a_missing_scanner_on_its_first_piece_also_from_parallel_workers():
    ids, loaded = _run(FIRST_CALL_IN_WORKERS.format(texts=json.dumps(TEXTS)))
    assert loaded == [scan.PAT_GPT2]
    assert ids == tltok_jit.get_encoding("r50k_base").encode_ordinary_batch(TEXTS, num_threads=1)


def test_load_scanner_contract():
    assert scan.load_scanner(scan.PAT_WHOLE) == 0  # the whole segment is the piece: no scanner
    with pytest.raises(ValueError, match="pattern kind 99 has no scanner"):
        scan.load_scanner(99)
    addr = scan.load_scanner(scan.PAT_O200K)
    assert addr != 0 and scanner_slots.SLOTS[scan.PAT_O200K] == addr
    assert scan.load_scanner(scan.PAT_O200K) == addr  # loaded once
    assert len(scan.SCANNER_ENTRIES) == scanner_slots.N_SCANNERS == scan.PAT_WHOLE
