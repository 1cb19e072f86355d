"""Cost of one `decode_incremental` call as the transcript grows, per registry kind.

    python bench/bench_incremental_decode.py [--calls 300] [--repeat 3] [--out bench/results/incremental_decode.md]

For every kind (symbol_table, sentencepiece, huggingface with a byte-level file and with Mistral-7B's
decoder chain, whisper, tiktoken, funasr_char) the ids of a mixed English / Chinese text are fed to
`tok.decode_incremental` until the state holds N ids (N = 100, 1,000, 10,000, 100,000; fed in chunks
of 1,000), then `--calls` more calls of one id each are timed; the table gives the median
microseconds per call (best of `--repeat`), and, for scale, one `decode` of the whole N-id prefix
(what re-rendering the prefix would cost per call). A flat row is a bounded window. After the timed
calls the emitted text (plus a final flush) is checked against `decode` of all ids fed.

Assets come from the shared folder (`$TLTOK_SHARED` or ../shared): llama2.model, llama3 and
mistral-7b tokenizer.json, Whisper's and o200k's rank files, the corpora. The symbol table is
llama2.model's pieces written as a units file and decodes llama2's ids; the funasr_char token list
is every Chinese character of the text plus its English words. Kinds whose assets are missing are
reported as skipped, with the path.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("TLTOK_SHARED") or (ROOT.parent / "shared")).resolve()
os.environ.setdefault("TLTOK_DATA", str(SHARED / "tokenizers"))

from tltok_jit import TokenizerSpec, build_tokenizer  # noqa: E402

SIZES = (100, 1_000, 10_000, 100_000)
TOK = SHARED / "tokenizers"


def mixed_text(n_chars: int = 400_000) -> str:
    english = (SHARED / "corpora" / "english-war-and-peace.txt").read_text(encoding="utf-8")
    chinese = (SHARED / "corpora" / "chinese-sanguo-yanyi.txt").read_text(encoding="utf-8")
    parts, k = [], 0
    while sum(map(len, parts)) < n_chars:  # alternating paragraphs, 3 English to 1 Chinese
        parts.append(english[k * 3000:(k + 1) * 3000])
        parts.append(chinese[k * 1000:(k + 1) * 1000])
        k += 1
    return "".join(parts)


def specs(tmp: Path, text: str) -> dict:
    """kind label -> (TokenizerSpec, the files it needs)."""
    out = {
        "sentencepiece (llama2.model)": (TokenizerSpec("sentencepiece", {"model": TOK / "sentencepiece/llama2.model"}),
                                         [TOK / "sentencepiece/llama2.model"]),
        "huggingface (llama3, byte-level)": (TokenizerSpec("huggingface", {"tokenizer": TOK / "llama3/tokenizer.json"}),
                                             [TOK / "llama3/tokenizer.json"]),
        "huggingface (mistral-7b, decoder chain)": (
            TokenizerSpec("huggingface", {"tokenizer": TOK / "mistral-7b/tokenizer.json"}),
            [TOK / "mistral-7b/tokenizer.json"]),
        "whisper (multilingual)": (TokenizerSpec("whisper", {"ranks": TOK / "tiktoken/whisper_multilingual.tiktoken"}),
                                   [TOK / "tiktoken/whisper_multilingual.tiktoken"]),
        "tiktoken (o200k_base)": (TokenizerSpec("tiktoken", {"ranks": TOK / "tiktoken/o200k_base.tiktoken"}),
                                  [TOK / "tiktoken/o200k_base.tiktoken"]),
    }
    # funasr_char: the text's Chinese characters and English words
    chars = sorted({c for c in text if "\u4e00" <= c <= "\u9fff"})
    words = sorted({w.lower() for w in re.findall(r"[A-Za-z]{2,}", text)})
    tokens_json = tmp / "tokens.json"
    tokens_json.write_text(json.dumps(["<blank>", "<s>", "</s>", "<unk>"] + chars + words), encoding="utf-8")
    out["funasr_char"] = (TokenizerSpec("funasr_char", {"tokens": tokens_json}), [])
    return out


def symbol_table_spec(tmp: Path, sp_tok) -> TokenizerSpec:
    units = tmp / "units.txt"
    # a piece holding a character str.split() splits at (U+0085, U+2028 ...) gets a stand-in name
    pieces = [p if len(p.split()) == 1 and p == p.strip() else f"<piece{i}>" for i, p in enumerate(sp_tok.model.pieces)]
    units.write_text("".join(f"{p} {i}\n" for i, p in enumerate(pieces)), encoding="utf-8")
    return TokenizerSpec("symbol_table", {"units": units})


def funasr_ids(tok, text: str) -> list[int]:
    # the kind encodes lower-case English words; keep letters, Chinese characters and spaces
    clean = re.sub(r"[^a-z\u4e00-\u9fff]+", " ", text.lower())
    return tok.encode(clean)


def measure(tok, ids: list[int], n: int, calls: int, repeat: int) -> tuple[float, float]:
    """(median us per single-id call with n ids in the state, ms of one decode of the n-id prefix)."""
    need = n + calls
    seq = (ids * (need // len(ids) + 1))[:need]
    best = float("inf")
    for _ in range(repeat):
        state: dict = {}
        emitted = []
        for a in range(0, n, 1000):
            emitted.append(tok.decode_incremental(seq[a:min(a + 1000, n)], state))
        times = []
        clock = time.perf_counter
        for i in seq[n:need]:
            t0 = clock()
            emitted.append(tok.decode_incremental([i], state))
            times.append(clock() - t0)
        emitted.append(tok.decode_incremental([], state, final=True))
        if "".join(emitted) != tok.decode(seq):
            raise AssertionError(f"{tok!r}: emitted text differs from decode at n={n}")
        best = min(best, statistics.median(times))
    t0 = time.perf_counter()
    tok.decode(seq[:n])
    whole = time.perf_counter() - t0
    return best * 1e6, whole * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="write the markdown table here")
    args = ap.parse_args(argv)

    text = mixed_text()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        todo = specs(tmp, text)
        built = {}
        for label, (spec, files) in todo.items():
            missing = [str(f) for f in files if not Path(f).is_file()]
            if missing:
                rows.append((label, None, f"skipped: missing {', '.join(missing)}"))
                continue
            built[label] = build_tokenizer(spec)
        sp = built.get("sentencepiece (llama2.model)")
        if sp is not None:
            built = {"symbol_table (llama2 pieces)": build_tokenizer(symbol_table_spec(tmp, sp)), **built}
        for label, tok in built.items():
            if label.startswith("symbol_table"):
                ids = sp.encode(text)
            elif label == "funasr_char":
                ids = funasr_ids(tok, text)
            else:
                ids = tok.encode(text)
            tok.decode_incremental(ids[:50], {})  # warm up (kernels, tables)
            tok.decode(ids[:50])
            cells = []
            for n in SIZES:
                us, whole_ms = measure(tok, ids, n, args.calls, args.repeat)
                cells.append((us, whole_ms))
                print(f"{label:42s} n={n:>7,}  {us:8.2f} us/call   decode(prefix) {whole_ms:9.3f} ms", flush=True)
            rows.append((label, cells, ""))

    lines = [
        "# decode_incremental: cost per call as the transcript grows",
        "",
        f"`python bench/bench_incremental_decode.py --calls {args.calls} --repeat {args.repeat}`; "
        f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}.",
        "",
        "Median microseconds per call of one id, with N ids already in the state (mixed English / Chinese "
        "text, 3:1 by characters); in brackets one `decode` of the N-id prefix in ms, the cost per call of "
        "re-rendering the whole prefix. Every run's emitted text was checked against `decode`.",
        "",
        "| kind | " + " | ".join(f"N = {n:,}" for n in SIZES) + " |",
        "|---|" + "---:|" * len(SIZES),
    ]
    for label, cells, note in rows:
        if cells is None:
            lines.append(f"| {label} | {note} |" + " |" * (len(SIZES) - 1))
        else:
            lines.append(f"| {label} | " + " | ".join(f"{us:.1f} us ({ms:.2f} ms)" for us, ms in cells) + " |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out is not None:
        args.out.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
