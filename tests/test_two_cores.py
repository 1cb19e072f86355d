"""bench/two_cores.py halves a job without losing a byte, and bench/worker.py pins a process to
the CPUs a job names and starts its timed call at the time the job names (saying when it could not)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import runner, two_cores  # noqa: E402

pytest.importorskip("tiktoken")


@pytest.mark.parametrize("text", ["", "one line", "a\nb\n", "first line\nsecond\nthird line, longer\n",
                                  "\n\n\n", "αβγ\nδ\n" * 7])
def test_halves_cut_after_a_line_end(text):
    a, b = two_cores.halves(text)
    assert a + b == text
    assert a == "" or a.endswith("\n") or b == ""
    assert len(a) >= len(text) // 2 or b == ""


@pytest.mark.parametrize("n", [0, 1, 2, 7, 10])
def test_doc_halves_alternate(n):
    docs = [f"doc {i}" for i in range(n)]
    a, b = two_cores.doc_halves(docs)
    assert sorted(a + b) == sorted(docs) and len(a) - len(b) in (0, 1)
    assert a == docs[0::2] and b == docs[1::2]


def _run(tmp_path, **extra) -> dict:
    text = tmp_path / "in.txt"
    text.write_text("hello world\n" * 50, encoding="utf-8")
    job = {"lib": "tiktoken", "encoding": "r50k_base", "mode": "whole", "input": str(text), "threads": 1, **extra}
    res = runner.run_job(json.loads(json.dumps(job)), 120)
    assert res["status"] == "ok", res
    return res


def test_worker_starts_its_timed_call_at_start_at(tmp_path):
    start_at = time.time() + 8
    res = _run(tmp_path, cpus=[0], start_at=start_at)
    assert res["late"] is False
    assert time.time() >= start_at


def test_worker_says_when_it_was_late(tmp_path):
    res = _run(tmp_path, cpus=[0], start_at=time.time() - 1)
    assert res["late"] is True


def test_worker_without_start_at_reports_nothing_of_it(tmp_path):
    assert "late" not in _run(tmp_path)
