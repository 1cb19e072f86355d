"""The one front door to the benchmarks: `python -m bench SUITE [its options]`.

    python -m bench                      # the suites, one line each
    python -m bench speed-tables --help  # a suite's own options

Each suite is a script of this folder (also runnable as `python bench/<file>.py`); its results go to
bench/results/ (the newest run per suite; history is in git).
"""

from __future__ import annotations

import importlib
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# suite -> (script, what it measures)
SUITES = {
    "speed-tables": ("speed_tables", "the side-by-side speed tables against tiktoken, gigatoken, fastokens (~1 h)"),
    "run": ("run", "the general harness: any encodings, modes, corpora, libraries, threads"),
    "cold-start": ("cold_start", "first contact: a new venv, a clean clone, empty caches"),
    "baseline-ab": ("baseline_ab", "the shipped kernels' CPU baseline against native code"),
    "compile-profile": ("compile_profile", "compile time per stage, kernel and compiler pass"),
    "hf": ("bench_hf", "tokenizer.json models against HF tokenizers and fastokens"),
    "sentencepiece": ("bench_sentencepiece", "SentencePiece models against sentencepiece"),
    "arrow": ("bench_arrow", "Arrow columns: encode_arrow / count_arrow / decode_arrow"),
    "e2e": ("bench_e2e", "`tltok encode` end to end, against tiktoken + pyarrow"),
    "padded": ("padded", "fixed-shape batches: encode_batch_padded vs encode_arrow and HF's padded encode_batch"),
    "packing": ("packing", "packing into training rows: bfd / concat / pad fill, pack vs encode_arrow, the loader"),
    "ray": ("bench_ray", "the Ray Data integration"),
    "stream-encode": ("bench_stream_encode", "the stream encoder"),
    "stream-decode": ("bench_stream_decode", "the stream decoders"),
    "stream-linear": ("stream_linear", "stream decoding cost per id as runs grow (fails above linear)"),
    "incremental-decode": ("bench_incremental_decode", "decode_incremental"),
    "long-piece": ("bench_long_piece", "one long piece (no split point)"),
    "two-cores": ("two_cores", "two threads against two processes on halves"),
    "engine-stages": ("engine_stages", "the piece engine's stages and its bound"),
    "perf-kernels": ("perf_kernels", "sampled profile of the kernels (perf)"),
    "decode-profile": ("decode_profile", "where decode's time goes"),
    "unseen": ("unseen", "seen against unseen text"),
    "memory-soak": ("memory_soak", "RSS while encoding an endless stream of unique text"),
    "file-fuzz": ("file_fuzz", "mutated tokenizer files: every outcome a load or a named error"),
    "chart": ("chart", "the README's chart from a speed-tables results file"),
    "mutation": ("mutation", "mutation testing of chosen kernels (a dev tool)"),
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        width = max(map(len, SUITES))
        for name, (script, what) in SUITES.items():
            if (HERE / f"{script}.py").exists():
                print(f"  {name:<{width}}  {what}")
        return 0
    name = argv[0]
    if name not in SUITES or not (HERE / f"{SUITES[name][0]}.py").exists():
        print(f"python -m bench: no suite {name!r}; run `python -m bench` for the list", file=sys.stderr)
        return 2
    script = SUITES[name][0]
    sys.argv = [str(HERE / f"{script}.py"), *argv[1:]]
    if str(HERE.parent) not in sys.path:
        sys.path.insert(0, str(HERE.parent))
    importlib.invalidate_caches()
    try:
        runpy.run_path(str(HERE / f"{script}.py"), run_name="__main__")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
