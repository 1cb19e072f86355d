"""bench/speed_tables.py's tables from result rows: each cell from its own row, the ratio to tiktoken
and ours over the best anchor, n/a for a row that is missing, failed or not exact."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import speed_tables  # noqa: E402


def _row(mode, lib, enc, corpus, threads, mbps, **kw):
    return {"mode": mode, "lib": lib, "encoding": enc, "corpus": corpus, "threads": threads, "status": "ok",
            "exact": True, "mbps": mbps, **kw}


def test_tiktoken_tables_cells_and_ratios():
    rows = [_row("whole", "tiktoken", "o200k_base", "english", 1, 20.0),
            _row("whole", "tltok_jit", "o200k_base", "english", 1, 50.0),
            _row("whole", "gigatoken", "o200k_base", "english", 1, 100.0),
            _row("whole", "fastokens", "o200k_base", "english", 1, 80.0),
            _row("whole", "tiktoken", "o200k_base", "code", 1, 10.0),
            _row("whole", "tltok_jit", "o200k_base", "code", 1, 90.0),
            _row("whole", "gigatoken", "o200k_base", "code", 1, 60.0, exact=False),  # not exact: n/a
            _row("short_loop", "tiktoken", "r50k_base", "short-strings", 1, 10.0, n_items=100_000, seconds=0.2),
            _row("short_loop", "tltok_jit", "r50k_base", "short-strings", 1, 15.0, n_items=100_000, seconds=0.125)]
    rows += [_row("whole", "tltok_jit[numpy]", "o200k_base", "english", 1, 70.0),
             _row("batch", "tiktoken", "o200k_base", "english", 2, 20.0),
             _row("batch", "tltok_jit[arrow]", "o200k_base", "english", 2, 90.0),
             _row("batch", "fastokens", "o200k_base", "english", 2, 60.0)]
    lines = speed_tables.tiktoken_tables(rows)
    # each anchor against ours of its own output: gigatoken (an array) 70 / 100, fastokens (a list) 50 / 80
    eng = next(line for line in lines if line.startswith("| o200k english"))
    assert eng == "| o200k english | 50.0 (2.5x) | 70.0 (3.5x) | 20.0 | 100.0 (5.0x) | 80.0 (4.0x) | 0.62 |"
    code = next(line for line in lines if line.startswith("| o200k code"))
    assert code == "| o200k code | 90.0 (9.0x) | n/a | 10.0 | n/a | n/a | n/a |"
    docs = [line for line in lines if line.startswith("| o200k english")][1]
    assert docs == "| o200k english | 90.0 (4.5x) | 20.0 | n/a | 60.0 (3.0x) | 1.50 |"
    short = next(line for line in lines if line.startswith("| r50k |"))
    assert short == "| r50k | 800.0 (1.6x) | 500.0 | n/a | n/a | n/a |"  # thousands of calls a second
    assert any(line.startswith("| r50k scripts | n/a |") for line in lines)


def test_hf_table_ratio_to_fastokens():
    rows = []
    for lib, mbps in (("tltok_jit", 60.0), ("tokenizers", 3.0), ("fastokens", 120.0)):
        for corpus in speed_tables.HF_CORPORA:
            rows.append({"lib": lib, "model": "llama3", "corpus": corpus, "mode": "whole", "threads": 1,
                         "bytes": int(mbps * 1e6), "wall": 1.0, "exact": True})
    rows.append({"lib": "tltok_jit", "model": "llama3", "corpus": "english", "mode": "batch", "threads": 2,
                 "error": ["failed"]})
    lines = speed_tables.hf_table(rows)
    whole = next(line for line in lines if line.startswith("| llama3, 1 thread"))
    assert whole.endswith("| 0.50 / 0.50 / 0.50 |")
    batch = next(line for line in lines if line.startswith("| llama3, 2 threads"))
    # ours, every anchor, and the ratio: no number for any of them
    assert batch == "| llama3, 2 threads, documents |" + " n/a / n/a / n/a |" * (len(speed_tables.HF_ANCHORS) + 2)
