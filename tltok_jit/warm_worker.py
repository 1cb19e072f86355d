"""The compile worker and the one list of calls that compiles an Encoding's kernels.

`python -m tltok_jit.warm_worker` is started by `tltok_jit.warm.start_background`: it takes the
compile lock, compiles each stage for a stand-in model (the kernels' types do not depend on the
vocabulary; the "hf" stage uses a tokenizer.json-style stand-in) and marks it ready. `tltok warmup`
runs `warm_encoding` in the foreground.
"""

from __future__ import annotations

import sys
import time

from . import arrow, warm
from .encoding import Encoding
from .kernels.jit import prune_kernel_caches
from .model import AddedToken, ModelDescription
from .patterns import O200K_PATTERN

WARM_TEXTS = ["Hello world, it's 2024!\n", "日本語のテキスト。", "  spaces   and\ttabs\r\n", "🙂👍🏽", "x" * 300]


def warm_single(enc) -> None:
    for t in WARM_TEXTS:
        enc.encode(t)
        enc.encode_ordinary(t)
        enc.encode_to_numpy(t)
        enc.encode(t, allowed_special="all")
    enc.decode(enc.encode("warm up the decoder"))
    enc.decode_bytes(enc.encode("a"))
    enc.decode_batch([enc.encode("one kernel call for a batch"), []])  # also the int64 ids of lists


def warm_hf(enc) -> None:
    """The kernels of the tokenizer.json text path (added tokens cut out in Python, a normalizer,
    bytes the vocabulary lacks), compiled for a stand-in model: `enc` does not matter."""
    hf = Encoding(stand_in_hf_model())
    for t in [*WARM_TEXTS, "e\u0301 <|endoftext|> x\x04y", "\x04\x06 1 2"]:
        hf.encode(t, allowed_special="all")
        hf.encode_ordinary(t)


def warm_rows(enc) -> None:
    texts = WARM_TEXTS * 4
    for threads in (1, 2):
        enc.encode_batch(texts, num_threads=threads)
        enc.encode_ordinary_batch(texts, num_threads=threads)
    enc.encode_batch(["é" * 20_000, "ü" * 20_000], num_threads=1)  # the Latin-1 rows kernel


def warm_arrow(enc) -> None:
    arrow.warmup(enc)


def warm_stream(enc) -> None:
    from .stream import StreamDecoder

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


WARMERS = {"single": warm_single, "hf": warm_hf, "rows": warm_rows, "arrow": warm_arrow,
           "stream": warm_stream}


def warm_encoding(enc, stages=warm.STAGES) -> None:
    """Compile (or load from the cache) every kernel `enc` uses in `stages`, in this process."""
    for s in stages:
        WARMERS[s](enc)


def stand_in_model():
    """A tiny tiktoken-style model: the kernels' types do not depend on the vocabulary, so compiling
    them for this one compiles them for every rank file."""
    vocab = {bytes([b]): b for b in range(256)}
    for t in (b"he", b"ll", b"hell", b"hello", b" w", b"or", b" wor", b"ld", b" world", "日".encode()[:2], "日".encode()):
        vocab[t] = len(vocab)
    return ModelDescription(name="tltok-stand-in", vocab=vocab, merges=None, pattern=O200K_PATTERN,
                            pattern_kind="o200k", added_tokens=[AddedToken("<|endoftext|>", len(vocab))])


def stand_in_hf_model():
    """A tiny byte-level tokenizer.json-style model with what sends texts through the tokenizer.json
    text path: an NFC normalizer, two single bytes missing from the vocabulary, an added token."""
    from .loaders.hf_json import HFPipeline
    from .pipeline.normalizers import NFC
    from .patterns import QWEN2_PATTERN

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


def main() -> int:
    lock = warm.take_lock()
    if lock is None:
        return 0  # another worker has it
    try:
        t0 = time.perf_counter()
        enc = Encoding(stand_in_model())
        for s in warm.STAGES:
            if not warm.stage_ready(s):
                WARMERS[s](enc)
                warm.mark_ready(s, time.perf_counter() - t0)
        prune_kernel_caches()
    finally:
        lock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
