"""The compile worker and the one list of calls that compiles an Encoding's kernels.

`python -m tltok_jit.compile.worker` is started by `tltok_jit.compile.background.start_background`: it takes the
compile lock, compiles each stage the starting model uses (warm.STAGES_ENV) and its scanner
(warm.SCANNER_ENV) for a stand-in model (the kernels' types do not depend on the vocabulary; the
"hf" stage uses a tokenizer.json-style stand-in) and marks it ready. It starts
`compile_jobs() - 1` helpers (`--part K`) that walk the stages in another order at the same time;
each kernel is compiled by whichever process reaches it first while the others wait for it and load
it (`kernels.jit._CompileLock`), so the stages compile side by side without compiling anything twice.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings

import numpy as np

from ..columns import arrow
from . import background as warm
from ..encoding import Encoding
from ..kernels.jit import prune_kernel_caches
from ..model.description import AddedToken, ModelDescription
from ..model.patterns import CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN
from ..engine.text import load_text_kernels

WARM_TEXTS = ["Hello world, it's 2024!\n", "日本語のテキスト。", "  spaces   and\ttabs\r\n", "🙂👍🏽", "x" * 300]


def warm_single(enc, threads=(1, 2)) -> None:
    load_text_kernels()  # the str -> UTF-8 kernels of long texts
    for t in WARM_TEXTS:
        enc.encode(t)
        enc.encode_ordinary(t)
        enc.encode_to_numpy(t)
        enc.encode(t, allowed_special="all")
    enc.decode(enc.encode("warm up the decoder"))
    enc.decode_bytes(enc.encode("a"))
    enc.decode_batch([enc.encode("one kernel call for a batch"), []])  # also the int64 ids of lists


def warm_hf(enc, threads=(1, 2)) -> None:
    """The kernels of the tokenizer.json text path (added tokens cut out in Python, a normalizer,
    bytes the vocabulary lacks), compiled for a stand-in model: `enc` does not matter."""
    hf = compiled_encoding(stand_in_hf_model())
    for t in [*WARM_TEXTS, "e\u0301 <|endoftext|> x\x04y", "\x04\x06 1 2"]:
        hf.encode(t, allowed_special="all")
        hf.encode_ordinary(t)
    hf.encode_batch([*WARM_TEXTS, "e\u0301 x\x04y"], num_threads=1, allowed_special="all")  # which rows need Python


def warm_rows(enc, threads=(1, 2)) -> None:
    texts = WARM_TEXTS * 4
    for n in threads:
        enc.encode_batch(texts, num_threads=n)
        enc.encode_ordinary_batch(texts, num_threads=n)
    enc.encode_batch(["é" * 20_000, "ü" * 20_000], num_threads=1)  # the Latin-1 rows kernel
    enc.encode_batch_padded(texts, pad_id=0, max_length=8, truncation=True, return_overflowing_tokens=True)


def warm_arrow(enc, threads=(1, 2)) -> None:
    arrow.warmup(enc, threads)


def warm_stream(enc, threads=(1, 2)) -> None:
    from ..streaming.decode import StreamDecoder

    dec = StreamDecoder(enc)
    for i in enc.encode("stream 日本 🙂"):
        dec.push(i)
    dec.finish()
    state: dict = {}
    enc.decode_incremental(enc.encode("incremental"), state)
    try:
        se = enc.stream_encoder()
    except NotImplementedError:  # models whose split has no online form
        return
    se.feed("Hello wor")
    se.feed_bytes("ld 日".encode())
    se.finish()


def engine_args() -> tuple:
    """Arguments of the types every stage calls the piece engine (`encode_ordinary_spans`: the
    scanners, the merges, the piece cache) with, made without building any table."""
    from ..kernels.handle_layout import HANDLE_LEN
    from ..engine.text import read_only

    return (read_only(np.zeros(1, dtype=np.uint8)), np.zeros(3, dtype=np.int64), 0,
            read_only(np.zeros(HANDLE_LEN, dtype=np.int64)), np.zeros(1, dtype=np.uint32), 0,
            np.zeros(1, dtype=np.int64))


def warm_engine() -> None:
    """Compile (or load) the piece engine from its argument types alone, never running it: a part
    can start on it while another builds the tables, which calling any kernel needs first."""
    import numba

    from ..kernels.encode import encode_ordinary_spans

    encode_ordinary_spans.compile(tuple(numba.typeof(a) for a in engine_args()))


def warm_without_engine(enc) -> None:
    """Compile (or load) what the stages use that does not call the piece engine: the decoders
    (one text, a batch, an Arrow column, a stream) and the cut finder. The first part runs it while
    the second is still compiling the engine, which it would otherwise wait for."""
    import pyarrow as pa

    from ..streaming.decode import StreamDecoder

    ids = [104, 101, 108, 108, 111, 256, 257]
    enc.decode(ids)
    enc.decode(ids * 8)
    enc.decode_bytes(ids)
    enc.decode_batch([ids, []])
    for typ in (pa.list_(pa.uint32()), pa.large_list(pa.uint32())):
        arrow.decode_arrow(enc, pa.array([ids, None, []], type=typ))
    dec = StreamDecoder(enc)
    for i in ids:
        dec.push(i)
    dec.finish()
    arrow.find_cuts(enc, "a b\nc")


def load_scanner_of(pattern_kind: str | None) -> None:
    """Compile (or load) the scanner of `pattern_kind` (tables.PATTERN_CODES; a tokenizer.json
    model's, say: the stand-in model loads its own)."""
    from ..kernels.scan import load_scanner
    from ..tables.bpe import PATTERN_CODES

    if pattern_kind in PATTERN_CODES:
        load_scanner(PATTERN_CODES[pattern_kind])


# Each warmer takes the Encoding and the thread counts to call with (one set of kernels serves every
# count: several threads run the serial kernels side by side).
WARMERS = {"single": warm_single, "hf": warm_hf, "rows": warm_rows, "arrow": warm_arrow,
           "stream": warm_stream}


def warm_encoding(enc, stages=None) -> None:
    """Compile (or load from the cache) every kernel `enc` uses in `stages` (default: the stages it
    uses, `enc.compile_stages`), in this process."""
    stages = enc.compile_stages if stages is None else stages
    for s in stages:
        WARMERS[s](enc)


def compiled_encoding(model) -> Encoding:
    """An Encoding of `model` that runs the kernels (compiling what the cache lacks), never the
    interim Python encoder, whatever TLTOK_COMPILE says: warming one must compile."""
    old = os.environ.get("TLTOK_COMPILE")
    os.environ["TLTOK_COMPILE"] = "foreground"
    try:
        return Encoding(model)
    finally:
        if old is None:
            del os.environ["TLTOK_COMPILE"]
        else:
            os.environ["TLTOK_COMPILE"] = old


# Stand-in patterns whose kind takes every code path the stages compile (long rows cut, streams)
_STAND_IN_PATTERNS = {"o200k": O200K_PATTERN, "cl100k": CL100K_PATTERN, "gpt2": R50K_PATTERN}


def stand_in_kind(pattern_kind: str | None) -> str:
    """The pattern kind of the stand-in model for `pattern_kind` (see stand_in_model)."""
    return pattern_kind if pattern_kind in _STAND_IN_PATTERNS else "o200k"


def stand_in_model(pattern_kind: str | None = None):
    """A tiny tiktoken-style model: the kernels' types do not depend on the vocabulary or the
    pattern, so compiling them for this one compiles them for every rank file. Its pattern is
    `pattern_kind`'s when that is a rank file's (its scanner is then the only one compiled), else
    o200k's."""
    kind = stand_in_kind(pattern_kind)
    vocab = {bytes([b]): b for b in range(256)}
    for t in (b"he", b"ll", b"hell", b"hello", b" w", b"or", b" wor", b"ld", b" world", "日".encode()[:2], "日".encode()):
        vocab[t] = len(vocab)
    return ModelDescription(name="tltok-stand-in", vocab=vocab, merges=None, pattern=_STAND_IN_PATTERNS[kind],
                            pattern_kind=kind, added_tokens=[AddedToken("<|endoftext|>", len(vocab))])


def stand_in_hf_model():
    """A tiny byte-level tokenizer.json-style model with what sends texts through the tokenizer.json
    text path: an NFC normalizer, two single bytes missing from the vocabulary, an added token."""
    from ..loaders.hf_json import HFPipeline
    from ..model.pipeline.normalizers import NFC
    from ..model.patterns import QWEN2_PATTERN

    missing = b"\x04\x06"
    vocab = {bytes([b]): i for i, b in enumerate(b for b in range(256) if bytes([b]) not in missing)}
    merges = [(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b"hell", b"o"), (b" ", b"w"), (b"o", b"r"),
              (b" w", b"or"), (b"l", b"d"), (b" wor", b"ld")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    eot = AddedToken("<|endoftext|>", len(vocab))
    pipe = HFPipeline(normalizers=(NFC(),), missing_bytes=missing, special_ids=frozenset({eot.id}))
    return ModelDescription(name="tltok-hf-stand-in", vocab=vocab, merges=merges, pattern=QWEN2_PATTERN,
                            pattern_kind="qwen2", added_tokens=[eot], ignore_merges=False,
                            allow_missing_bytes=True, hf=pipe)


# The order each compiling process walks the stages in. Every stage runs the piece engine, which
# needs the tables' types only: the second part compiles it (warm_engine) while the first builds
# the tables, then starts on the stream kernels, the largest set the single-text stage lacks.
PART_ORDERS = (("single", "rows", "hf", "arrow", "stream"),
               ("stream", "arrow", "rows", "single", "hf"))
JOBS_ENV = "TLTOK_COMPILE_JOBS"


def compile_jobs() -> int:
    """Processes the worker compiles in: $TLTOK_COMPILE_JOBS, else 2 (1 on a single core)."""
    v = os.environ.get(JOBS_ENV, "")
    if v.strip().isdigit() and int(v) >= 1:
        return min(int(v), len(PART_ORDERS))
    if v.strip():
        warnings.warn(f"{JOBS_ENV}={v!r} is not a whole number >= 1; compiling in the default number of "
                      "processes", stacklevel=2)
    return min(len(PART_ORDERS), os.cpu_count() or 1)


def run_part(part: int, t0: float, say=None, stages=warm.BASE_STAGES, pattern_kind: str | None = None) -> None:
    """Compile (or load) every stage of `stages` not yet ready, in PART_ORDERS[part]'s order, marking
    each, and the scanner of `pattern_kind`; `say(stage, seconds)` after each (default: a line on
    standard error, the compile log)."""
    say = say or (lambda what, sec: print(f"compile part {part}: {what} done at {sec:.1f} s "
                                          f"(CPU {time.process_time():.1f} s)", file=sys.stderr, flush=True))
    if part == 1 and not warm.all_ready(stages):
        warm_engine()
        # the scanners next: the first part reaches its stand-in's only after building the tables
        load_scanner_of(stand_in_kind(pattern_kind))
        load_scanner_of(pattern_kind)
        say("engine", time.perf_counter() - t0)
    enc = compiled_encoding(stand_in_model(pattern_kind))
    if part == 0 and not warm.all_ready(stages):
        warm_without_engine(enc)
        load_scanner_of(pattern_kind)
        say("decoders", time.perf_counter() - t0)
    for s in PART_ORDERS[part]:
        if s in stages and not warm.stage_ready(s):
            WARMERS[s](enc, (1, 2) if part == 0 else (2, 1))
            warm.mark_ready(s, time.perf_counter() - t0)
            say(s, time.perf_counter() - t0)


def compile_parts(say=None, stages=warm.BASE_STAGES, pattern_kind: str | None = None) -> None:
    """Compile every stage of `stages` not yet ready and the scanner of `pattern_kind`: part 0 here,
    the others in helper processes at the same time (their lines go to the compile log); `say` as in
    run_part. The caller holds the compile lock."""
    t0 = time.perf_counter()
    env = warm.worker_env()
    env[warm.STAGES_ENV] = ",".join(stages)
    env[warm.SCANNER_ENV] = pattern_kind or ""
    with open(os.path.join(warm.state_dir(), warm.LOG_NAME), "ab") as log:
        helpers = [subprocess.Popen([sys.executable, "-m", "tltok_jit.compile.worker", "--part", str(k)],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
                   for k in range(1, compile_jobs())]
    try:
        run_part(0, t0, say, stages, pattern_kind)
    finally:
        for h in helpers:
            h.wait()
    run_part(0, t0, say, stages, pattern_kind)  # a stage a helper did not finish (it died): here, alone


def requested_stages(value: str | None) -> tuple[str, ...]:
    """The stages named in `value` (comma-separated, as warm.start_background passes them), in
    warm.STAGES order; BASE_STAGES when it names none."""
    names = set((value or "").split(","))
    return tuple(s for s in warm.STAGES if s in names) or warm.BASE_STAGES


def main(argv: list[str]) -> int:
    os.environ["TLTOK_COMPILE"] = "foreground"  # compile here, also when started by hand (never interim)
    stages = requested_stages(os.environ.get(warm.STAGES_ENV))
    kind = os.environ.get(warm.SCANNER_ENV) or None
    if argv[:1] == ["--part"]:  # a helper of compile_parts: the process that started it holds the lock
        run_part(int(argv[1]), time.perf_counter(), stages=stages, pattern_kind=kind)
        return 0
    lock = warm.take_lock()
    if lock is None:
        return 0  # another worker has it
    try:
        compile_parts(stages=stages, pattern_kind=kind)
        prune_kernel_caches()
    finally:
        lock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
