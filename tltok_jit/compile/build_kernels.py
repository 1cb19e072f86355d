"""Compile every kernel the package's entry points use, for the shipped CPU baseline, into the folder
the built package carries (`tltok_jit/compiled/`, see kernels.numba_cache).

    python -m tltok_jit.compile.build_kernels OUT [--reuse DIR] [--cpu x86-64|x86-64-v2|x86-64-v3|x86-64-v4]

setup.py runs it on the package it is building (that copy first on the path). It starts a process
with numba targeting `numba_cache.BASELINE_CPU` and an empty kernel cache, which compiles the
stages of `warm_worker` (in processes side by side), every scanner, and the SentencePiece and
stream kernels for stand-in models, then copies the machine code to OUT with a manifest naming
what it was built with. `--reuse DIR` keeps a copy per build identity in DIR and takes it from there
when the same sources were compiled with the same numba before (a checkout installed twice).
`--cpu` targets another CPU than the shipped baseline (for measuring what the baseline costs).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

_SKIP = ("state-", "locks", "compile.log", ".tmp")
# the encodings whose tables the package carries (built once here rather than in a user's first
# process): the default one; each is ~12 MB of the wheel
SHIPPED_TABLES = ("o200k_base",)
_V2 = ("cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3")
# CPU names numba can target (NUMBA_CPU_NAME) -> the LLVM features a CPU needs to run their code.
# The default is numba_cache.BASELINE_CPU; the others are for measuring (--cpu).
BASELINES = {
    "x86-64": (),
    "x86-64-v2": _V2,
    "x86-64-v3": _V2 + ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"),
    "x86-64-v4": _V2 + ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave",
                        "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"),
}


def _identity_key(ident: dict) -> str:
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


def compile_all() -> None:
    """Compile (into this process's kernel cache) every kernel a shipped entry point uses.

    The worker's stages run in two processes (compile_parts). The rest (_steps) is walked by a third
    process, started beside them, from its end, and by this one from its start once the stages are
    done, so no core idles while the other finishes. A kernel both reach is compiled once (each is
    compiled under a lock of its own) and then only loaded by the other."""
    from . import background as warm
    from .worker import compile_parts

    other = subprocess.Popen([sys.executable, "-m", "tltok_jit.compile.build_kernels", "--compile-steps-reversed"],
                             stdin=subprocess.DEVNULL)
    try:
        compile_parts(stages=warm.STAGES)
        for step in _steps():
            step()
    finally:
        if other.wait() != 0:
            raise SystemExit(f"tltok_jit: compiling kernels in a second process failed (exit {other.returncode})")
    _build_tables()


def _steps() -> list:
    """What the worker's stages do not compile: every scanner, the stream, padded and long-result
    kernels, tokenizer.json files with SentencePiece-style BPE, SentencePiece models, WordPiece and
    Unigram files, packing and training."""
    from functools import partial

    from ..kernels import packing, padding, train_bpe, unigram, wordpiece
    from ..kernels.scan import load_scanner
    from ..kernels.scanner_slots import N_SCANNERS

    return [*(partial(load_scanner, kind) for kind in range(N_SCANNERS)), _warm_stream_and_padded,
            _warm_sentencepiece_style_json, _warm_long_results, padding.warm, wordpiece.warm, packing.warm,
            _warm_sentencepiece, unigram.warm, train_bpe.warm]


def _warm_stream_and_padded() -> None:
    from .worker import compiled_encoding, stand_in_hf_model, warm_stream

    warm_stream(compiled_encoding(stand_in_hf_model()))
    padded = compiled_encoding(stand_in_hf_model())
    for dtype in ("int64", "int32"):  # the fill kernel of fixed-shape batches, one variant per output type
        padded.encode_batch_padded(["a fixed", "shape"], pad_id=0, dtype=dtype)


def _warm_long_results() -> None:
    """A long text's ids as a list: more ids than the stages' texts give, so the list is filled by
    the kernel that writes int objects straight into it (pylist), on one thread and on two."""
    from .worker import compiled_encoding, stand_in_model

    enc = compiled_encoding(stand_in_model())
    text = " a" * 600_000
    for threads in (1, 2):
        enc.encode(text, num_threads=threads)
        enc.encode_ordinary(text, num_threads=threads)


def _build_tables() -> None:
    """The tables of SHIPPED_TABLES, into this process's table cache (the embedded rank files); the
    stand-in models' tables go with them (a few KB)."""
    from .. import get_encoding

    os.environ["TLTOK_OFFLINE"] = "1"
    os.environ.pop("TLTOK_DATA", None)
    for name in SHIPPED_TABLES:
        get_encoding(name).encode("tables built")


def _warm_sentencepiece_style_json() -> None:
    """The kernels of tokenizer.json files with SentencePiece-style BPE (Metaspace, byte fallback),
    for a tiny file of Mistral-7B's shape."""
    from .. import from_file
    from .worker import WARM_TEXTS

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"<0x{b:02X}>": 3 + b for b in range(256)}}
    merges = [("\u2581", "h"), ("e", "l"), ("\u2581h", "el"), ("l", "o"), ("\u2581hel", "lo")]
    for p in ("\u2581", "h", "e", "l", "o", "w", "r", "d"):
        vocab.setdefault(p, len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                "special": True} for i, t in enumerate(("<unk>", "<s>", "</s>"))]
    doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
           "normalizer": {"type": "Sequence", "normalizers": [
               {"type": "Prepend", "prepend": "\u2581"},
               {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
           "pre_tokenizer": None, "post_processor": None,
           "decoder": {"type": "Sequence", "decoders": [
               {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
               {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
           "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "vocab": vocab,
                     "merges": [f"{a} {b}" for a, b in merges]}}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tokenizer.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        enc = from_file(path)
        for t in WARM_TEXTS:
            enc.decode(enc.encode(t, allowed_special="all"))
        for n in (1, 2):
            enc.encode_batch(WARM_TEXTS * 4, num_threads=n)


def _stand_in_sentencepiece(model_type: int):
    from ..loaders.sentencepiece_model import BYTE, CONTROL, NORMAL, UNKNOWN, SentencePieceModel

    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [UNKNOWN, CONTROL, CONTROL] + [BYTE] * 256
    for p in ("\u2581", "h", "e", "l", "o", "he", "ll", "hell", "hello", "\u2581hello", "w", "r", "d", "\u2581w"):
        pieces.append(p)
        types.append(NORMAL)
    scores = [0.0] * 3 + [0.0] * 256 + [-float(i) for i in range(len(pieces) - 259)]
    return SentencePieceModel(pieces=pieces, scores=scores, types=types, model_type=model_type, byte_fallback=True)


def _warm_sentencepiece() -> None:
    import pyarrow as pa

    from ..kinds.sentencepiece import SentencePieceTokenizer
    from ..loaders.sentencepiece_model import BPE, UNIGRAM
    from ..tables.sentencepiece import build_tables

    texts = ["hello world", "héllo 日本 🙂", "", "  two  spaces\n"]
    for model_type in (BPE, UNIGRAM):
        tok = SentencePieceTokenizer(build_tables(_stand_in_sentencepiece(model_type)))
        for t in texts:
            ids = tok.encode(t)
            tok.encode_to_numpy(t)
            tok.decode(ids)
            tok.token_pieces(ids)
            tok.decode_incremental(ids, {}, final=True)
        tok.encode("hello world " * 60_000)  # a long result: its list is filled by pylist's kernel (int64 ids)
        for n in (1, 2):
            tok.encode_arrow(pa.array(texts + [None]), num_threads=n)
            tok.count_arrow(pa.array(texts + [None]), num_threads=n)
            tok.encode_arrow(pa.array(texts, type=pa.large_string()), num_threads=n)


def _copy_machine_code(src: str, out: str) -> None:
    os.makedirs(out, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if name.startswith(_SKIP):
            continue
        s = os.path.join(src, name)
        if os.path.isdir(s):
            shutil.copytree(s, os.path.join(out, name), ignore=shutil.ignore_patterns("*.tmp.*", ".tmp-*"))
        else:
            shutil.copy2(s, os.path.join(out, name))


def _write_manifest(out: str, cpu: str) -> None:
    from numba.core.registry import cpu_target

    from ..kernels import numba_cache

    m = numba_cache.build_identity()
    m.update(cpu=cpu, features=list(BASELINES[cpu]), magic=list(cpu_target.target_context.codegen().magic_tuple()))
    with open(os.path.join(out, numba_cache.MANIFEST), "w") as f:
        json.dump(m, f, indent=1, sort_keys=True)


def _compile_into(out: str) -> None:
    """In a process whose numba targets the baseline (numba reads the target at import)."""
    from ..kernels import numba_cache

    cpu = os.environ.get("NUMBA_CPU_NAME", "")
    assert cpu in BASELINES, cpu
    t0 = time.perf_counter()
    compile_all()
    _copy_machine_code(numba_cache.KERNEL_CACHE_DIR, out)
    _write_manifest(out, cpu)
    print(f"tltok_jit: kernels compiled for {cpu} in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)


def build(out: str, reuse: str | None = None, cpu: str | None = None) -> int:
    import platform

    from ..kernels import numba_cache

    if platform.machine().lower() not in ("x86_64", "amd64"):
        print(f"tltok_jit: no shipped kernels for {platform.machine()} (they compile on first use)",
              file=sys.stderr)
        return 0
    cpu = cpu or numba_cache.BASELINE_CPU
    if cpu not in BASELINES:
        print(f"tltok_jit: --cpu {cpu!r} is not one of {', '.join(BASELINES)}", file=sys.stderr)
        return 2
    shutil.rmtree(out, ignore_errors=True)
    key = _identity_key(dict(numba_cache.build_identity(), cpu=cpu))
    kept = os.path.join(reuse, key) if reuse else None
    if kept and numba_cache.read_manifest(kept) is not None:
        shutil.copytree(kept, out)
        print(f"tltok_jit: kernels taken from an earlier build of the same sources ({kept})", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory(prefix="tltok-build-") as cache:
        env = dict(os.environ)
        for k in ("NUMBA_CACHE_DIR", "TLTOK_NO_CACHE", "TLTOK_NO_TABLE_CACHE"):
            env.pop(k, None)
        env.update(NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES="", TLTOK_KERNEL_CACHE=cache,
                   TLTOK_COMPILE="foreground", TLTOK_NO_SHIPPED_KERNELS="1")
        here = os.path.dirname(numba_cache.PACKAGE_DIR)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
        r = subprocess.run([sys.executable, "-m", "tltok_jit.compile.build_kernels", "--compile-into", out], env=env)
        if r.returncode != 0:
            shutil.rmtree(out, ignore_errors=True)
            return r.returncode
    if kept:
        shutil.rmtree(kept, ignore_errors=True)
        os.makedirs(os.path.dirname(kept), exist_ok=True)
        shutil.copytree(out, kept)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--compile-steps-reversed"]:  # the third process of compile_all, in its environment
        for step in reversed(_steps()):
            step()
        return 0
    if argv[:1] == ["--compile-into"]:
        _compile_into(argv[1])
        return 0
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    opt = {k: argv[argv.index(f"--{k}") + 1] for k in ("reuse", "cpu") if f"--{k}" in argv}
    return build(argv[0], opt.get("reuse"), opt.get("cpu"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
