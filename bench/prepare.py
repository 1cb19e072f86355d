"""Materialize the benchmark inputs and tiktoken's oracle ids on disk.

One job: write every input once to bench/.cache/inputs/ (text as .txt, lists
of strings as .json) and tiktoken's ids for it to bench/.cache/oracle/, named
by a hash of the content, so all workers read byte-identical inputs and the
oracle is computed once (outside any timed process).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench import data, oracle

CACHE = Path(__file__).resolve().parent / ".cache"


@dataclass
class Input:
    mode: str  # whole | long | batch | worst | short | memory | decode | decode-docs | decode-short
    corpus: str  # english | code | chinese | random-letters | aaaa | short-strings | english-xN
    path: Path
    bytes: int
    items: int
    note: str = ""
    oracles: dict[str, Path] = field(default_factory=dict)


def _digest(obj) -> str:
    h = hashlib.sha1()
    if isinstance(obj, str):
        h.update(obj.encode("utf-8"))
    else:
        for s in obj:
            h.update(s.encode("utf-8"))
            h.update(b"\x00")
    return h.hexdigest()[:12]


def write_input(mode: str, corpus: str, obj, note: str = "") -> Input:
    """`obj` (a text, or a list of strings) written once under CACHE/inputs, named by its content."""
    d = CACHE / "inputs"
    d.mkdir(parents=True, exist_ok=True)
    key = f"{mode}-{corpus}-{_digest(obj)}"
    if isinstance(obj, str):
        path = d / f"{key}.txt"
        if not path.is_file():
            path.write_text(obj, encoding="utf-8")
        nbytes, items = len(obj.encode("utf-8")), 1
    else:
        path = d / f"{key}.json"
        if not path.is_file():
            path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
        nbytes, items = sum(len(s.encode("utf-8")) for s in obj), len(obj)
    return Input(mode, corpus, path, nbytes, items, note)


def ensure_oracle(inp: Input, encoding: str) -> Path:
    d = CACHE / "oracle" / encoding
    d.mkdir(parents=True, exist_ok=True)
    path = d / (inp.path.stem + ".npz")
    if not path.is_file():
        if inp.path.suffix == ".json":
            docs = json.loads(inp.path.read_text(encoding="utf-8"))
            flat, lens = oracle.oracle_batch(encoding, docs)
        else:
            text = inp.path.read_text(encoding="utf-8")
            enc = oracle.tiktoken_encoding(encoding)
            flat = enc.encode_to_numpy(text, disallowed_special=()).astype(np.uint32)
            lens = np.array([flat.size], dtype=np.int64)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, flat=flat, lens=lens)
        tmp.replace(path)
    inp.oracles[encoding] = path
    return path


@dataclass
class Sizes:
    corpus_bytes: int | None  # None = whole corpus
    worst_chars: int
    short_n: int
    memory_bytes: int


FULL = Sizes(corpus_bytes=None, worst_chars=1_000_000, short_n=100_000, memory_bytes=100_000_000)
QUICK = Sizes(corpus_bytes=200_000, worst_chars=100_000, short_n=10_000, memory_bytes=5_000_000)


def build_inputs(modes: list[str], corpora: list[str], sizes: Sizes) -> list[Input]:
    out: list[Input] = []
    for c in corpora if ("whole" in modes or "batch" in modes or "long" in modes or "decode" in modes) else []:
        text = data.corpus(c, sizes.corpus_bytes)
        note = ""
        if c == "code":
            import platform

            note = f"CPython {platform.python_version()} stdlib .py files"
        if "whole" in modes:
            out.append(write_input("whole", c, text, note=note))
        if "long" in modes:
            out.append(write_input("long", c, text, note=note))
        if "batch" in modes:
            docs = data.split_docs(text)
            out.append(write_input("batch", c, docs, note=f"{len(docs)} docs" + (f"; {note}" if note else "")))
        if "decode" in modes:  # decoded from tiktoken's ids of the text (its oracle)
            out.append(write_input("decode", c, text, note=note))
            docs = data.split_docs(text)
            out.append(write_input("decode-docs", c, docs,
                                    note=f"{len(docs)} docs" + (f"; {note}" if note else "")))
    if "worst" in modes:
        out.append(write_input("worst", "random-letters", data.worst_random_letters(sizes.worst_chars),
                                note="seeded random a-z, no spaces"))
        out.append(write_input("worst", "aaaa", data.worst_repeated_a(sizes.worst_chars), note='"a" * n'))
    if "short" in modes:
        out.append(write_input("short", "short-strings", data.short_strings(sizes.short_n),
                                note=f"{sizes.short_n} x 20-char English slices"))
    if "decode" in modes:
        out.append(write_input("decode-short", "short-strings", data.short_strings(sizes.short_n),
                                note=f"{sizes.short_n} x 20-char English slices"))
    if "memory" in modes:
        text, copies = data.memory_text(sizes.memory_bytes)
        out.append(write_input("memory", f"english-x{copies}", text, note=f"English corpus repeated {copies}x"))
    return out
