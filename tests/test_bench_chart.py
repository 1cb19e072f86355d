"""bench/chart.py draws the README's chart from a speed-tables results file, and the README shows it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import chart  # noqa: E402

TABLES = """# Speed tables

### 1 thread, one whole text (MB/s)

| | tltok_jit (list) | tiktoken | fastokens (list) | ours / best anchor |
|---|---:|---:|---:|---:|
| o200k english | 105.5 (8.0x) | 13.2 | 126.5 (9.6x) | 0.83 |
| o200k code | 1,125.9 (7.8x) | 16.2 | n/a | n/a |

### 2 threads, ~1.5 KB documents (MB/s; ours: encode_arrow)

| | tltok_jit | tiktoken | ours / best anchor |
|---|---:|---:|---:|
| o200k english | 186.2 (13.4x) | 13.9 | n/a |
"""


def test_read_table_takes_each_cell_number_and_drops_the_ratio_column():
    libs, rows = chart.read_table(TABLES, "1 thread, one whole text")
    assert libs == ["tltok_jit (list)", "tiktoken", "fastokens (list)"]
    assert rows == [("o200k english", [105.5, 13.2, 126.5]), ("o200k code", [1125.9, 16.2, None])]
    libs, rows = chart.read_table(TABLES, "2 threads, ~1.5 KB documents")
    assert libs == ["tltok_jit", "tiktoken"] and rows == [("o200k english", [186.2, 13.9])]
    with pytest.raises(ValueError):
        chart.read_table(TABLES, "20-character strings")


def test_chart_of_the_newest_results_file_is_a_png(tmp_path):
    results = chart.latest_results()
    out = tmp_path / "charts" / "speed.png"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "chart.py"), str(results), "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_chart_refuses_a_file_without_the_tables(tmp_path):
    bad = tmp_path / "speed-tables-2026-01-01.md"
    bad.write_text("# Speed tables\n\nno tables here\n")
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "chart.py"), str(bad), "-o", str(tmp_path / "x.png")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "no table headed" in proc.stderr
    assert not (tmp_path / "x.png").exists()


def test_readme_shows_the_committed_chart_of_the_file_its_table_quotes():
    readme = (REPO / "README.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", readme)
    assert images, "the README shows no chart"
    for img in images:
        png = REPO / img
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", img
        assert png.stat().st_size < 100_000, f"{img} is {png.stat().st_size} bytes"
    quoted = set(re.findall(r"bench/results/(speed-tables-[\w-]+\.md)", readme))
    assert quoted and all((REPO / "bench" / "results" / q).exists() for q in quoted), quoted


def test_bench_front_door_lists_and_runs_suites():
    """`python -m bench` lists every suite whose script exists, refuses an unknown one by name, and
    hands a suite its own options."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    listing = subprocess.run([sys.executable, "-m", "bench"], cwd=repo, capture_output=True, text=True, check=True)
    assert "speed-tables" in listing.stdout and "cold-start" in listing.stdout
    bad = subprocess.run([sys.executable, "-m", "bench", "nosuch"], cwd=repo, capture_output=True, text=True)
    assert bad.returncode == 2 and "no suite 'nosuch'" in bad.stderr
    ok = subprocess.run([sys.executable, "-m", "bench", "chart", "--help"], cwd=repo, capture_output=True, text=True)
    assert ok.returncode == 0 and "usage" in ok.stdout.lower()
