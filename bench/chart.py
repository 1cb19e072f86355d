"""The README's chart: MB/s of tltok_jit, tiktoken, gigatoken and fastokens from a speed-tables results
file (bench/speed_tables.py's Markdown), one thread on one whole text and two threads on ~1.5 KB
documents, drawn as a PNG.

    python bench/chart.py                                              # newest speed-tables-*.md -> docs/speed.png
    python bench/chart.py bench/results/speed-tables-2026-12-05n.md -o /tmp/speed.png

Every bar is a number of the file's tables "1 thread, one whole text" and "2 threads, ~1.5 KB
documents" (a cell "120.5 (9.5x)" is 120.5 MB/s; "n/a" draws no bar). Needs matplotlib (the test
extra); drawn with the Agg backend, so no display is needed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DEFAULT_OUT = ROOT / "docs" / "speed.png"
# the summary file of a speed-tables run (not its -tiktoken / -hf row files)
SUMMARY = re.compile(r"^speed-tables-\d{4}-\d\d-\d\d[a-z]?\.md$")
PANELS = (("1 thread, one whole text", "1 thread, one whole text (MB/s)"),
          ("2 threads, ~1.5 KB documents", "2 threads, ~1.5 KB documents (MB/s)"))
COLORS = {"tltok_jit (list)": "#1f4e9c", "tltok_jit (numpy)": "#6f9ede", "tltok_jit": "#1f4e9c",
          "tiktoken": "#9a9a9a", "gigatoken (numpy)": "#e08a1e", "gigatoken": "#e08a1e",
          "fastokens (list)": "#3a9a4a", "fastokens": "#3a9a4a"}


def latest_results(folder: Path = RESULTS) -> Path:
    """The newest speed-tables summary in `folder` (run labels sort by name: -05 < -05a < -05n)."""
    found = sorted(p for p in folder.iterdir() if SUMMARY.match(p.name))
    if not found:
        raise FileNotFoundError(f"no speed-tables-<date>.md in {folder}")
    return found[-1]


def _number(cell: str) -> float | None:
    m = re.match(r"\s*([\d,]+(?:\.\d+)?)", cell)
    return float(m.group(1).replace(",", "")) if m else None


def read_table(text: str, heading: str) -> tuple[list[str], list[tuple[str, list[float | None]]]]:
    """The table under the first heading that starts with `heading`: its library columns (without the
    first, the row label, and the last, ours over the best anchor) and its rows of MB/s."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if line.lstrip("#").strip().startswith(heading) and line.startswith("#")), None)
    if start is None:
        raise ValueError(f"no table headed {heading!r}")
    rows = []
    header = None
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if not line.startswith("|"):
            if header is not None and rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif set(cells[0]) <= set("-: "):
            continue
        else:
            rows.append((cells[0], [_number(c) for c in cells[1:-1]]))
    if header is None or not rows:
        raise ValueError(f"the table headed {heading!r} has no rows")
    return header[1:-1], rows


def draw(results: Path, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    text = results.read_text()
    tables = [read_table(text, heading) for heading, _ in PANELS]
    fig, axes = plt.subplots(2, 1, figsize=(9, 6.6), dpi=100)
    for ax, (libs, rows), (_, title) in zip(axes, tables, PANELS):
        n = len(libs)
        width = 0.8 / n
        for j, lib in enumerate(libs):
            xs = [i + (j - (n - 1) / 2) * width for i, (_, vals) in enumerate(rows) if vals[j] is not None]
            ys = [vals[j] for _, vals in rows if vals[j] is not None]
            ax.bar(xs, ys, width, label=lib, color=COLORS.get(lib))
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([label.replace(" ", "\n", 1) for label, _ in rows], fontsize=8)
        ax.set_title(title, fontsize=10, loc="left")
        ax.set_ylabel("MB/s", fontsize=9)
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        ax.legend(fontsize=7, ncol=n, loc="upper right", frameon=False)
        ax.set_ylim(0, max(v for _, vals in rows for v in vals if v is not None) * 1.18)
    fig.suptitle(f"{results.name}: ids equal to tiktoken's in every bar; higher is faster", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="?", type=Path, help="a speed-tables results file (default: the newest)")
    ap.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT, help=f"the PNG (default {DEFAULT_OUT})")
    args = ap.parse_args(argv)
    results = args.results or latest_results()
    try:
        out = draw(results, args.out)
    except (OSError, ValueError) as e:
        print(f"chart: {e}", file=sys.stderr)
        return 2
    print(f"{results} -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
