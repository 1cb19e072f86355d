"""notebooks/throughput.ipynb runs top to bottom and produces exact, non-zero numbers.

The code cells are executed in order in one namespace, as a kernel would run them, with
matplotlib's non-interactive Agg backend: no Jupyter is needed. The notebook runs the benchmark
harness at its default small size (bench/run.py --max-bytes, fresh process per number) on the four
libraries of the test extras; its JSON goes to a temporary folder. The optional anchors (gigatoken,
fastokens, bpe-openai, tokie) are left out here: they are not test dependencies, and each adds six
fresh processes.
"""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "notebooks" / "throughput.ipynb"
REQUIRED = ("tiktoken", "tltok_jit", "tltok_jit[arrow]", "hf-tokenizers")
FILES = ("corpora/english-war-and-peace.txt", "corpora/chinese-sanguo-yanyi.txt", "corpora/emoji-test.txt",
         "corpora/udhr", "tokenizers/tiktoken/o200k_base.tiktoken")


def run_notebook(path: Path) -> dict:
    nb = json.loads(path.read_text(encoding="utf-8"))
    ns: dict = {"__name__": "__main__"}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{path.name}[cell {i}]", "exec"), ns)  # noqa: S102
    return ns


def test_notebook_is_committed_without_large_outputs():
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert len(json.dumps(cell.get("outputs", []))) < 20_000


def test_throughput_notebook_runs(tmp_path, monkeypatch, shared_path):
    for rel in FILES:
        shared_path(rel)  # skips, naming the path, when shared/ lacks it
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("BENCH_SHARED", str(shared_path("corpora").parent))
    monkeypatch.setenv("THROUGHPUT_OUT", str(tmp_path))
    monkeypatch.setenv("THROUGHPUT_LIBS", ",".join(REQUIRED))
    monkeypatch.chdir(NOTEBOOK.parent)  # where Jupyter would start the kernel
    ns = run_notebook(NOTEBOOK)
    try:
        rows = ns["rows"]
        corpora, threads, libs = ns["CORPORA"], ns["THREADS"], ns["LIBS"]
        assert list(libs) == list(REQUIRED)
        assert {(r["corpus"], r["lib"], r["threads"]) for r in rows} == {
            (c, lib, t) for c in corpora for lib in libs for t in threads}
        for r in rows:
            if r["lib"] in REQUIRED:
                assert r.get("status") == "ok", r
            if r.get("status") == "ok":
                assert r["exact"] is True, r
                assert r["mbps"] > 0 and r["bytes"] > 100_000, r
            assert r["encoding"] == "o200k_base" and r["mode"] == "batch"
        ratios = ns["ratios"]
        assert list(ratios.columns) == threads
        assert (ratios.xs("tiktoken", level="library") == 1.0).all().all()
        for lib in REQUIRED:
            assert (ratios.xs(lib, level="library") > 0).all().all(), lib
        fig = ns["fig"]
        assert len(fig.axes) == len(corpora)
        assert all(len(ax.patches) == len(libs) * len(threads) for ax in fig.axes)
        png = tmp_path / "throughput.png"
        fig.savefig(png)
        assert png.stat().st_size > 10_000
    finally:
        plt.close("all")
