"""Mutation fuzzing of tokenizer files: every mutated file must load and run, or be refused by name.

A case is a seed file (a real tokenizer file, or a small one derived from it) changed by one
mutation: bytes flipped, set, deleted, inserted or duplicated, the file truncated, two files
spliced, or a structured change of the format (a SentencePiece field, a rank-file line, a
tokenizer.json value of the wrong type, an id out of range, a merge whose parts are missing ...).
The worker loads the mutated file and, if it loads, encodes and decodes the texts of `TEXTS` and
decodes random ids in range. Each case ends in one outcome:

  ok        loaded; every encode and decode ran (for rank files: decode(encode(text)) == text)
  refused   the load raised a `tltok_jit.TltokError` subclass whose message names the file
  fail      anything else: another exception type, an error that does not name the file, an
            error after a successful load, a wrong round trip
  crash     the worker process died (a segfault, an abort, the memory limit)
  hang      no answer within the case timeout

Cases run in one worker process at a time (`Runner`), which gets case numbers on stdin and
answers one JSON line per case; a crash or a hang kills it, is recorded against the case it was
running, and a new worker takes the next case. Cases are numbered: case `i` of seed `s` is always
the same file (`make_case`), so a failure is replayed with `python tests/file_fuzz.py --replay i
--seed s`. The worker runs under an address-space limit (`MEMORY_LIMIT`), so a file that makes the
loader allocate without bound fails fast instead of exhausting the machine.

Used by tests/test_file_fuzz.py (a bounded default run, a longer one with --run-slow) and
bench/file_fuzz.py (long runs, results in bench/results/file-fuzz.md).
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import random
import selectors
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TLTOK_SHARED") or (REPO.parent / "shared")).resolve()
TOKENIZERS = SHARED / "tokenizers"

KINDS = ("sentencepiece", "tiktoken", "tokenizer.json", "symbol_table", "funasr_char")
MEMORY_LIMIT = 4 << 30  # bytes of address space per worker
CASE_TIMEOUT = 60.0  # seconds for one case (a loaded machine, a large seed)
START_TIMEOUT = 1800.0  # seconds for a worker to start and load every seed (kernels may compile)

# Texts every loaded file encodes and decodes: scripts, combining marks, emoji sequences, control
# and noncharacters, the symbols tokenizer files use (U+2581, <unk>, <0x41>, special tokens), runs
# long enough for the long-piece merge paths.
TEXTS = [
    "Hello, world! It's 2024 and we're testing tokenizers.",
    "",
    " ",
    "  leading and trailing  ",
    "\t\n\r\n\x0b\x0c\n\n",
    "naïve café — 你好，世界！ こんにちは 안녕하세요 Ελληνικά",
    "مرحبا بالعالم שָׁלוֹם नमस्ते दुनिया สวัสดีครับ",
    "e\u0301 a\u0308 \u1100\u1161\u11a8 ǅ ﬁ Ａ１",
    "👨\u200d👩\u200d👧\u200d👦 🏳️\u200d🌈 🇺🇳 👍🏽",
    "\u2581hello\u2581\u2581world\u2581",
    "<unk> <s> </s> <|endoftext|> <0x41> [UNK] <|begin_of_text|>",
    "\x00\x01\x7f\u0085\u00a0\u200b\u200d\ufeff\ufffd\U0010ffff\uffff\U000e0001",
    "12345678901234567890 ٠١٢٣ ①② ½",
    "a" * 1500,
    "ab" * 600 + " " * 200 + "你" * 200,
    "hel@@ lo 你好 ABC x y z",
]


# --------------------------------------------------------------------------------------------
# seeds
# --------------------------------------------------------------------------------------------

@dataclass
class Seed:
    kind: str
    name: str          # how the case report names it
    path: str          # the file
    arg: str = ""      # tiktoken: the encoding name the file is loaded as
    weight: float = 1.0
    full: bool = False  # a real file of full size (slower cases)

    @property
    def suffix(self) -> str:
        return {"sentencepiece": ".model", "tiktoken": ".tiktoken", "tokenizer.json": ".json",
                "symbol_table": ".txt", "funasr_char": ".json"}[self.kind]


def _shrink_tokenizer_json(src: Path, keep: int, n_added: int) -> dict:
    """`src` with the vocabulary cut to ids < keep, the merges among them, at most n_added added
    tokens (renumbered after the vocabulary, the post-processor's ids with them)."""
    d = json.loads(src.read_text(encoding="utf-8"))
    model = d["model"]
    vocab = {s: i for s, i in model["vocab"].items() if i < keep}
    model["vocab"] = vocab
    if "merges" in model:
        kept = []
        for m in model["merges"]:
            a, b = m.split(" ") if isinstance(m, str) else m
            if a in vocab and b in vocab and a + b in vocab:
                kept.append(m)
        model["merges"] = kept
    remap = {}
    added = []
    next_id = len(vocab)
    for t in d.get("added_tokens", []):
        if t["content"] in vocab:
            remap[t["id"]] = vocab[t["content"]]
            added.append(dict(t, id=vocab[t["content"]]))
        elif len(added) < n_added:
            remap[t["id"]] = next_id
            added.append(dict(t, id=next_id))
            next_id += 1
    d["added_tokens"] = added
    kept_contents = {t["content"] for t in added}

    def fix(node):
        if isinstance(node, dict):
            if node.get("type") == "TemplateProcessing":
                specials = node.get("special_tokens", {})
                for name in list(specials):
                    ids = [remap.get(i) for i in specials[name].get("ids", [])]
                    if name not in kept_contents or None in ids:
                        del specials[name]
                    else:
                        specials[name]["ids"] = ids
                for key in ("single", "pair"):
                    node[key] = [x for x in node.get(key, [])
                                 if "SpecialToken" not in x or x["SpecialToken"]["id"] in specials]
            for v in node.values():
                fix(v)
        elif isinstance(node, list):
            for v in node:
                fix(v)

    fix(d.get("post_processor"))
    return d


def _units_lines(model_path: Path) -> list[str]:
    """A WeNet-style units table made of a SentencePiece model's pieces."""
    sys.path.insert(0, str(REPO))
    from tltok_jit.loaders.sentencepiece_model import parse_model_proto

    m = parse_model_proto(model_path.read_bytes(), str(model_path))
    lines = ["<blank> 0", "<unk> 1"]
    seen = {"<blank>", "<unk>"}
    for p in m.pieces:
        if p in seen or not p.split() or len(p.split()) != 1:
            continue
        seen.add(p)
        lines.append(f"{p} {len(lines)}")
    lines.append(f"<sos/eos> {len(lines)}")
    return lines


def _funasr_tokens(model_path: Path) -> list[str]:
    """A Paraformer-style token list: specials, CJK characters, English pieces with "@@"."""
    tokens = ["<blank>", "<s>", "</s>"]
    tokens += [chr(c) for c in range(0x4E00, 0x4E00 + 300)]
    for line in _units_lines(model_path)[2:-1]:
        p = line.rsplit(" ", 1)[0].replace("\u2581", "")
        if p and p.isascii() and p not in tokens:
            tokens.append(p)
            if p + "@@" not in tokens:
                tokens.append(p + "@@")
    tokens += ["，", "。", "<unk>"]
    return tokens


def prepare_seeds(workdir: Path, *, full: bool) -> list[Seed]:
    """The seed files (written to `workdir` when derived); `full`: also the real files of full size."""
    workdir.mkdir(parents=True, exist_ok=True)
    seeds: list[Seed] = []
    spm = TOKENIZERS / "sentencepiece"
    for name, w in (("botchan_en_bpe_1000", 1.0), ("botchan_en_unigram_1000", 1.0), ("llama2", 0.5)):
        p = spm / f"{name}.model"
        if p.is_file():
            seeds.append(Seed("sentencepiece", name, str(p), weight=w))
    tik = TOKENIZERS / "tiktoken"
    for name in ("r50k_base", "cl100k_base", "o200k_base"):
        p = tik / f"{name}.tiktoken"
        if not p.is_file():
            continue
        small = workdir / f"{name}-1000.tiktoken"
        if not small.is_file():
            with open(p, "rb") as f:
                small.write_bytes(b"".join(next(f) for _ in range(1000)))
        seeds.append(Seed("tiktoken", f"{name}[:1000]", str(small), arg=name))
        if full and name == "r50k_base":
            seeds.append(Seed("tiktoken", name, str(p), arg=name, weight=0.3, full=True))
    for name, keep, n_added in (("gpt2", 1000, 1), ("smollm2", 1000, 6), ("llama3", 1000, 6),
                                ("qwen2.5", 1000, 6), ("mistral-nemo", 1300, 8), ("mistral-7b", 1000, 3)):
        p = TOKENIZERS / name / "tokenizer.json"
        if not p.is_file():
            continue
        small = workdir / f"{name}-small" / "tokenizer.json"
        if not small.is_file():
            small.parent.mkdir(exist_ok=True)
            small.write_text(json.dumps(_shrink_tokenizer_json(p, keep, n_added), ensure_ascii=False),
                             encoding="utf-8")
        seeds.append(Seed("tokenizer.json", f"{name}[small]", str(small)))
        if full and name in ("gpt2", "smollm2", "mistral-7b"):
            seeds.append(Seed("tokenizer.json", name, str(p), weight=0.3, full=True))
    p = TOKENIZERS / "minilm" / "tokenizer.json"  # WordPiece (the BERT family)
    if p.is_file():
        seeds.append(Seed("tokenizer.json", "minilm", str(p), weight=0.2))
    bpe = spm / "botchan_en_bpe_1000.model"
    if bpe.is_file():
        units = workdir / "units.txt"
        if not units.is_file():
            units.write_text("\n".join(_units_lines(bpe)) + "\n", encoding="utf-8")
        seeds.append(Seed("symbol_table", "units.txt", str(units)))
        tokens = workdir / "tokens.json"
        if not tokens.is_file():
            tokens.write_text(json.dumps(_funasr_tokens(bpe), ensure_ascii=False), encoding="utf-8")
        seeds.append(Seed("funasr_char", "tokens.json", str(tokens)))
    return seeds


# --------------------------------------------------------------------------------------------
# byte mutations (every kind)
# --------------------------------------------------------------------------------------------

_INTERESTING_BYTES = b"\x00\x01\x7f\x80\xbf\xc0\xff\n\r \t\"\\{}[],:0-9=+/\xe2\x96\x81"


def _pos(rng: random.Random, data: bytes) -> int:
    return rng.randrange(len(data)) if data else 0


def byte_mutation(data: bytes, rng: random.Random, others: list[bytes]) -> tuple[bytes, str]:
    op = rng.choice(("flip", "flips", "set", "delete", "insert", "duplicate", "truncate", "splice", "zero"))
    b = bytearray(data)
    if op == "flip" and b:
        p = _pos(rng, b)
        bit = rng.randrange(8)
        b[p] ^= 1 << bit
        return bytes(b), f"flip bit {bit} of byte {p}"
    if op == "flips" and b:
        n = rng.randint(2, 32)
        for _ in range(n):
            b[_pos(rng, b)] ^= 1 << rng.randrange(8)
        return bytes(b), f"flip {n} random bits"
    if op == "set" and b:
        p = _pos(rng, b)
        v = rng.choice(_INTERESTING_BYTES)
        b[p] = v
        return bytes(b), f"byte {p} = {v:#04x}"
    if op == "zero" and b:
        p = _pos(rng, b)
        n = rng.randint(1, 64)
        b[p:p + n] = bytes(len(b[p:p + n]))
        return bytes(b), f"{n} bytes zeroed at {p}"
    if op == "delete" and b:
        p = _pos(rng, b)
        n = rng.choice((1, 2, 4, rng.randint(1, 4096)))
        del b[p:p + n]
        return bytes(b), f"{n} bytes deleted at {p}"
    if op == "insert":
        p = _pos(rng, b)
        ins = bytes(rng.randrange(256) for _ in range(rng.choice((1, 4, rng.randint(1, 256)))))
        b[p:p] = ins
        return bytes(b), f"{len(ins)} random bytes inserted at {p}"
    if op == "duplicate" and b:
        p = _pos(rng, b)
        n = rng.randint(1, 2048)
        q = _pos(rng, b)
        b[q:q] = b[p:p + n]
        return bytes(b), f"bytes {p}..{p + n} copied to {q}"
    if op == "truncate":
        p = _pos(rng, b)
        return bytes(b[:p]), f"truncated to {p} bytes"
    other = rng.choice(others) if others else data
    p, q = _pos(rng, b), _pos(rng, other)
    return bytes(b[:p]) + other[q:], f"spliced at {p} with another seed from {q}"


# --------------------------------------------------------------------------------------------
# SentencePiece ModelProto
# --------------------------------------------------------------------------------------------

def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, pos
        shift += 7


def pb_fields(data: bytes) -> list[list]:
    """[number, wire, value] of each field of a well-formed message (value: int, or bytes for wire 2)."""
    out = []
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, pos = _read_varint(data, pos)
        elif wire == 1:
            v = int.from_bytes(data[pos:pos + 8], "little")
            pos += 8
        elif wire == 5:
            v = int.from_bytes(data[pos:pos + 4], "little")
            pos += 4
        elif wire == 2:
            n, pos = _read_varint(data, pos)
            v = data[pos:pos + n]
            pos += n
        else:
            raise ValueError(f"wire type {wire}")
        out.append([num, wire, v])
    return out


def pb_write(fields: list[list]) -> bytes:
    out = bytearray()
    for num, wire, v in fields:
        out += _varint((num << 3) | wire)
        if wire == 0:
            out += _varint(v)
        elif wire == 1:
            out += (v & ((1 << 64) - 1)).to_bytes(8, "little")
        elif wire == 5:
            out += (v & 0xFFFFFFFF).to_bytes(4, "little")
        else:
            out += _varint(len(v)) + v
    return bytes(out)


def _f32(x: float) -> int:
    return int.from_bytes(struct.pack("<f", x), "little")


_TYPES = (-1, 0, 1, 2, 3, 4, 5, 6, 7, 99, 2**31 - 1, 2**32 + 1, 2**63)
_SCORES = (math.nan, math.inf, -math.inf, -0.0, 3.4e38, -3.4e38, 1e-45, 0.0, 1000.0)
_PIECES = ("", "<unk>", "<s>", "<0x41>", "<0xZZ>", "<0x0A>", "\u2581", "\u2581\u2581", "a", "▁the",
           "x" * 300, "\x00", "\ufffd", "<blk>", "😀", "\u2581hello world")


def spm_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    top = pb_fields(data)
    pieces = [f for f in top if f[0] == 1]
    ops = ("type", "score", "text", "text_bytes", "delete", "dup", "swap", "trainer", "normalizer",
           "charsmap", "charsmap", "charsmap", "drop_spec", "denormalizer", "unknown_field", "wire")
    op = rng.choice(ops)
    if op in ("type", "score", "text", "text_bytes") and pieces:
        k = rng.randrange(len(pieces)) if rng.random() < 0.7 else rng.randrange(min(len(pieces), 300))
        sub = pb_fields(pieces[k][2])
        if op == "type":
            v = rng.choice(_TYPES)
            sub = [f for f in sub if f[0] != 3] + [[3, 0, v]]
            desc = f"piece {k} type = {v}"
        elif op == "score":
            v = rng.choice(_SCORES)
            sub = [f for f in sub if f[0] != 2] + [[2, 5, _f32(v)]]
            desc = f"piece {k} score = {v}"
        elif op == "text":
            if rng.random() < 0.4:
                j = rng.randrange(len(pieces))
                other = next((f[2] for f in pb_fields(pieces[j][2]) if f[0] == 1), b"")
                text, desc = other, f"piece {k} text = that of piece {j}"
            else:
                t = rng.choice(_PIECES)
                text, desc = t.encode("utf-8"), f"piece {k} text = {t[:20]!r}"
            sub = [f for f in sub if f[0] != 1] + [[1, 2, text]]
        else:
            raw = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
            sub = [f for f in sub if f[0] != 1] + [[1, 2, raw]]
            desc = f"piece {k} text = bytes {raw!r}"
        pieces[k][2] = pb_write(sub)
        return pb_write(top), desc
    if op == "delete" and pieces:
        f = rng.choice(pieces)
        k = pieces.index(f)
        top.remove(f)
        return pb_write(top), f"piece {k} deleted"
    if op == "dup" and pieces:
        f = rng.choice(pieces)
        top.insert(top.index(f), list(f))
        return pb_write(top), f"piece {pieces.index(f)} duplicated"
    if op == "swap" and len(pieces) > 1:
        a, b = rng.sample(range(len(pieces)), 2)
        pieces[a][2], pieces[b][2] = pieces[b][2], pieces[a][2]
        return pb_write(top), f"pieces {a} and {b} swapped"
    trainer = next((f for f in top if f[0] == 2), None)
    norm = next((f for f in top if f[0] == 3), None)
    if op == "trainer" and trainer is not None:
        sub = pb_fields(trainer[2])
        num, wire, v = rng.choice(((3, 0, rng.choice((0, 1, 2, 3, 4, 5, 2**40))), (3, 2, b"\x01"), (35, 0, 1),
                                   (35, 0, 0), (24, 0, 1), (44, 2, b"\xff\xfe"), (44, 0, 7), (35, 2, b"x")))
        sub = [f for f in sub if f[0] != num] + [[num, wire, v]]
        trainer[2] = pb_write(sub)
        return pb_write(top), f"trainer_spec field {num} (wire {wire}) = {v!r}"
    if op == "normalizer" and norm is not None:
        sub = pb_fields(norm[2])
        num, wire, v = rng.choice(((3, 0, 0), (3, 0, 1), (4, 0, 0), (5, 0, 0), (1, 2, b"\xc3"), (3, 2, b""),
                                   (2, 0, 5), (4, 5, 1)))
        sub = [f for f in sub if f[0] != num] + [[num, wire, v]]
        norm[2] = pb_write(sub)
        return pb_write(top), f"normalizer_spec field {num} (wire {wire}) = {v!r}"
    if op == "charsmap" and norm is not None:
        sub = pb_fields(norm[2])
        cm = next((f for f in sub if f[0] == 2), None)
        blob = bytearray(cm[2]) if cm is not None else bytearray()
        how = rng.choice(("trie", "trie", "size", "repl", "cut", "random"))
        if how == "trie" and len(blob) > 8:
            size = min(struct.unpack("<I", blob[:4])[0], len(blob) - 4)
            n = rng.randint(1, 16)
            for _ in range(n):
                blob[4 + rng.randrange(max(size, 1))] ^= 1 << rng.randrange(8)
            desc = f"{n} bits of the charsmap trie flipped"
        elif how == "size" and len(blob) >= 4:
            v = rng.choice((0, 4, 8, len(blob) - 4, len(blob), len(blob) + 4, 2**32 - 4,
                            rng.randrange(len(blob)) & ~3))
            blob[:4] = struct.pack("<I", v & 0xFFFFFFFF)
            desc = f"charsmap trie size = {v}"
        elif how == "repl" and len(blob) > 8:
            size = min(struct.unpack("<I", blob[:4])[0], len(blob) - 4)
            tail = blob[4 + size:]
            for i in range(len(tail)):
                if tail[i] == 0 and rng.random() < 0.5:
                    tail[i] = rng.choice(b"\x80\xff ab")
            blob[4 + size:] = tail
            desc = "charsmap replacement strings: NULs overwritten"
        elif how == "cut" and blob:
            p = rng.randrange(len(blob))
            del blob[p:]
            desc = f"charsmap cut to {p} bytes"
        else:
            n = rng.choice((4, 5, 8, 64, 1024))
            blob = bytearray(struct.pack("<I", rng.choice((4, 8, n - 4 if n > 4 else 0)))) + bytearray(
                rng.randrange(256) for _ in range(n))
            desc = f"charsmap = {n + 4} random bytes"
        sub = [f for f in sub if f[0] != 2] + [[2, 2, bytes(blob)]]
        norm[2] = pb_write(sub)
        return pb_write(top), desc
    if op == "drop_spec":
        num = rng.choice((2, 3))
        top = [f for f in top if f[0] != num]
        return pb_write(top), f"field {num} of ModelProto removed"
    if op == "denormalizer":
        src = norm[2] if norm is not None and rng.random() < 0.5 else pb_write([[1, 2, b"identity"]])
        top.append([5, 2, src])
        return pb_write(top), "denormalizer_spec added"
    if op == "unknown_field":
        num = rng.choice((4, 6, 99, 536870911))
        top.insert(rng.randrange(len(top) + 1), [num, 2, b"\x08\x01"])
        return pb_write(top), f"unknown field {num} inserted"
    num = rng.choice((1, 2, 3))
    top.insert(rng.randrange(len(top) + 1), [num, 0, rng.choice((0, 1, 2**63))])
    return pb_write(top), f"field {num} with wire type 0 inserted"


# --------------------------------------------------------------------------------------------
# .tiktoken rank files
# --------------------------------------------------------------------------------------------

_RANKS = ("-1", "-0", "+1", "007", "1e3", "0x10", "٣", "", " ", "18446744073709551616", "9223372036854775807",
          "2147483647", "2147483648", "999999999999999999", "1" * 40)


def _b64(b: bytes) -> bytes:
    return base64.b64encode(b)


def tiktoken_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    n = len(lines)
    k = rng.randrange(n) if n else 0
    op = rng.choice(("delete", "delete_byte", "dup", "swap_ranks", "rank", "rank_of", "token", "token_of",
                     "token_bad", "sep", "crlf", "blank", "shuffle", "append", "special", "long", "renumber",
                     "renumber", "swap_block"))
    desc = op
    if op == "renumber" and n > 300:
        # a valid file of another vocabulary: a token removed or added, the ranks after it renumbered
        k = rng.randrange(256, n)
        if rng.random() < 0.5:
            del lines[k]
            desc = f"line {k + 1} deleted, later ranks renumbered"
        else:
            raw = bytes(rng.randrange(256) for _ in range(rng.randint(2, 12)))
            lines.insert(k, _b64(raw) + b" 0")
            desc = f"token {raw!r} inserted at rank {k}, later ranks renumbered"
        lines = [ln.split(b" ", 1)[0] + b" %d" % r for r, ln in enumerate(lines)]
        return b"\n".join(lines) + b"\n", desc
    if op == "swap_block" and n > 300:
        # valid: the ranks of a block of merged tokens permuted (merges then come in another order)
        a = rng.randrange(256, n - 2)
        b = min(n, a + rng.randint(2, 200))
        ranks = [ln.split(b" ", 1)[1] for ln in lines[a:b]]
        rng.shuffle(ranks)
        lines[a:b] = [ln.split(b" ", 1)[0] + b" " + r for ln, r in zip(lines[a:b], ranks)]
        return b"\n".join(lines) + b"\n", f"ranks of lines {a + 1}..{b} permuted"
    if op == "delete" and n:
        del lines[k]
        desc = f"line {k + 1} deleted"
    elif op == "delete_byte" and n:
        k = rng.randrange(min(n, 256))
        del lines[k]
        desc = f"line {k + 1} (a single-byte token) deleted"
    elif op == "dup" and n:
        lines.insert(k, lines[k])
        desc = f"line {k + 1} duplicated"
    elif op == "swap_ranks" and n > 1:
        a, b = rng.sample(range(n), 2)
        ta, ra = lines[a].split(b" ", 1)
        tb, rb = lines[b].split(b" ", 1)
        lines[a], lines[b] = ta + b" " + rb, tb + b" " + ra
        desc = f"ranks of lines {a + 1} and {b + 1} swapped"
    elif op in ("rank", "rank_of") and n:
        tok = lines[k].split(b" ", 1)[0]
        if op == "rank":
            r = rng.choice(_RANKS + (str(n), str(n + 1), str(50256), str(2**31 - 2)))
        else:
            r = lines[rng.randrange(n)].split(b" ", 1)[-1].decode("ascii", "replace")
        lines[k] = tok + b" " + r.encode("utf-8")
        desc = f"line {k + 1} rank = {r[:30]!r}"
    elif op in ("token", "token_of", "token_bad") and n:
        rank = lines[k].split(b" ", 1)[-1]
        if op == "token":
            raw = bytes(rng.randrange(256) for _ in range(rng.choice((1, 2, 3, rng.randint(1, 64)))))
            tok = _b64(raw)
        elif op == "token_of":
            tok = lines[rng.randrange(n)].split(b" ", 1)[0]
        else:
            tok = rng.choice((b"", b"=", b"==", b"====", b"QQ=", b"QR==", b"QUI", b"QU=B", b"Q!==", b"\xff\xfe",
                              b"QUJD\x00", b"QUJDRA", b"@@@@", b"QUJD====", b"=QUI"))
        lines[k] = tok + b" " + rank
        desc = f"line {k + 1} token = {tok[:30]!r}"
    elif op == "sep" and n:
        tok, _, rank = lines[k].partition(b" ")
        sep = rng.choice((b"  ", b"\t", b"", b" \x00", b"\xc2\xa0", b" + "))
        lines[k] = tok + sep + rank + rng.choice((b"", b" ", b"\t", b" x"))
        desc = f"line {k + 1} separator {sep!r}"
    elif op == "crlf":
        lines = [ln + b"\r" if rng.random() < 0.5 else ln for ln in lines]
        desc = "CR before some newlines"
    elif op == "blank":
        for _ in range(rng.randint(1, 5)):
            lines.insert(rng.randint(0, n), rng.choice((b"", b" ", b"\r", b"\x00", b"\xef\xbb\xbf")))
        desc = "blank or stray lines inserted"
    elif op == "shuffle" and n > 2:
        a = rng.randrange(n - 1)
        b = min(n, a + rng.randint(2, 64))
        block = lines[a:b]
        rng.shuffle(block)
        lines[a:b] = block
        desc = f"lines {a + 1}..{b} shuffled"
    elif op == "append":
        extra = rng.choice((_b64(b"\xff\xfe\xfd") + b" %d" % n, _b64(b"<|endoftext|>") + b" %d" % n,
                            _b64(b"zz" * 500) + b" %d" % n, b"QUJD", _b64(b"hello") + b" " + str(n + 5).encode()))
        lines.append(extra)
        desc = f"line appended {extra[:40]!r}"
    elif op == "special" and n:
        lines[k] = _b64(b"<|endoftext|>") + b" " + lines[k].split(b" ", 1)[-1]
        desc = f"line {k + 1} token = <|endoftext|>"
    elif op == "long" and n:
        raw = bytes(rng.randrange(256) for _ in range(rng.choice((1000, 10000, 70000))))
        lines[k] = _b64(raw) + b" " + lines[k].split(b" ", 1)[-1]
        desc = f"line {k + 1} token of {len(raw)} bytes"
    return b"\n".join(lines) + (b"\n" if rng.random() < 0.9 else b""), desc


# --------------------------------------------------------------------------------------------
# tokenizer.json
# --------------------------------------------------------------------------------------------

WRONG_VALUES = (None, True, False, 0, -1, 1.5, 2**31, 2**31 - 1, 2**63, 10**30, -2**63, math.nan, math.inf, "",
                "x", "\u2581", [], [1], ["a", "b"], {}, {"a": 1}, {"type": "Nope"}, {"String": 5}, {"Regex": "("})
BAD_IDS = (-1, -2, -2**63, 2**31 - 2, 2**31 - 1, 2**31, 2**32, 2**40, 2**63, 10**30, 1.5, 1.0, math.nan, True, False,
           "5", None, [], 10**6, 65536)
BAD_PATTERNS = ("(", ")", "[", "\\", "(?<", "\\x{zz}", "\\p{Nope}", "[[:alpha:]&&a]", "(?z)", "", "a{2,1}", "\\h+",
                "(?i)x", "\\Z\\z", "[^]", ".*", "$", "^", "(?m).", "\\x{110000}", "\\x{D800}", " ")


def _walk(node, path=()):
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            if path[:2] == ("model", "vocab") or (path == ("model",) and k in ("vocab", "merges")):
                yield path + (k,), v  # not into the big tables (their own mutations pick entries)
                continue
            yield from _walk(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, path + (i,))


def _get(node, path):
    for p in path:
        node = node[p]
    return node


def hf_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    d = json.loads(data.decode("utf-8"))
    model = d.get("model") if isinstance(d.get("model"), dict) else {}
    vocab = model.get("vocab") if isinstance(model.get("vocab"), dict) else {}
    merges = model.get("merges") if isinstance(model.get("merges"), list) else []
    added = d.get("added_tokens") if isinstance(d.get("added_tokens"), list) else []
    op = rng.choice(("value", "value", "delete_key", "vocab_id", "vocab_id", "vocab_del", "vocab_dup_id", "vocab_key",
                     "vocab_add", "merge_del_part", "merge_bad", "merge_swap", "merge_dup", "added_id", "added_field",
                     "added_dup", "added_vocab", "template", "pattern", "stage_field", "model_field", "vocab_swap_ids",
                     "merges_cut", "vocab_hole"))
    desc = op
    keys = list(vocab)
    if op == "vocab_swap_ids" and len(keys) > 1:  # valid: two tokens trade ids
        a, b = rng.sample(keys[:300] if rng.random() < 0.5 else keys, 2)
        vocab[a], vocab[b] = vocab[b], vocab[a]
        return json.dumps(d).encode("utf-8"), f"model.vocab {a!r} and {b!r} trade ids"
    if op == "merges_cut" and merges:  # valid: fewer merges, many tokens unreachable
        k = rng.randrange(len(merges))
        if rng.random() < 0.5:
            del merges[k:]
        else:
            del merges[:k]
        return json.dumps(d).encode("utf-8"), f"merges cut at {k}"
    if op == "vocab_hole" and keys:  # valid: a token no merge makes removed, its id left free
        used = set()
        for m in merges:
            parts = m.split(" ", 1) if isinstance(m, str) else m
            used.update(parts)
            used.add("".join(parts))
        free = [k for k in keys if k not in used]
        if free:
            k = rng.choice(free)
            del vocab[k]
            return json.dumps(d).encode("utf-8"), f"model.vocab[{k!r}] (in no merge) removed"
    if op == "value":
        paths = [p for p, _ in _walk(d) if p and p[0] != "model" or len(p) in (2, 3)]
        path = rng.choice(paths)
        v = rng.choice(WRONG_VALUES)
        _get(d, path[:-1])[path[-1]] = v
        desc = f"{'.'.join(map(str, path))} = {v!r}"
    elif op == "delete_key":
        paths = [p for p, _ in _walk(d) if p and isinstance(_get(d, p[:-1]), dict)
                 and (p[0] != "model" or len(p) == 2)]
        path = rng.choice(paths)
        del _get(d, path[:-1])[path[-1]]
        desc = f"{'.'.join(map(str, path))} deleted"
    elif op == "vocab_id" and keys:
        k = rng.choice(keys[:300] if rng.random() < 0.5 else keys)
        v = rng.choice(BAD_IDS + (vocab[rng.choice(keys)], len(vocab), len(vocab) + len(added)))
        vocab[k] = v
        desc = f"model.vocab[{k!r}] = {v!r}"
    elif op == "vocab_del" and keys:
        k = rng.choice(keys[:300] if rng.random() < 0.5 else keys)
        del vocab[k]
        desc = f"model.vocab[{k!r}] deleted"
    elif op == "vocab_dup_id" and len(keys) > 1:
        a, b = rng.sample(keys, 2)
        vocab[a] = vocab[b]
        desc = f"model.vocab[{a!r}] = the id of {b!r}"
    elif op == "vocab_key" and keys:
        k = rng.choice(keys)
        new = rng.choice(("", " ", "\u2581", "\x00", "é", "ĠĠĠ", "a b", "<0x41>", "<unk>", "😀", "Ā" * 50,
                          rng.choice(keys) + rng.choice(keys)))
        vocab[new] = vocab.pop(k)
        desc = f"model.vocab key {k!r} renamed {new!r}"
    elif op == "vocab_add":
        new = rng.choice(("zzzz", "Ġ" * 40, "\u2581x", "<0xFF>", "£"))
        v = rng.choice(BAD_IDS + (len(vocab), len(vocab) + 1000))
        vocab[new] = v
        desc = f"model.vocab[{new!r}] = {v!r} added"
    elif op == "merge_del_part" and merges:
        r = rng.randrange(len(merges))
        m = merges[r]
        a, b = m.split(" ", 1) if isinstance(m, str) else (m + ["", ""])[:2]
        gone = rng.choice((a, b, a + b))
        if isinstance(gone, str):
            vocab.pop(gone, None)
        desc = f"merge {r} {m!r}: {gone!r} removed from the vocabulary"
    elif op == "merge_bad":
        v = rng.choice(("a", "a b c", "", " ", "a  b", "zz qq", ["a"], ["a", 1], [None, "b"], ["a", "b", "c"], 7,
                        None, {"a": "b"}, ["a", "b"]))
        merges.insert(rng.randint(0, len(merges)), v)
        desc = f"merge {v!r} inserted"
    elif op == "merge_swap" and len(merges) > 1:
        a, b = rng.sample(range(len(merges)), 2)
        merges[a], merges[b] = merges[b], merges[a]
        desc = f"merges {a} and {b} swapped"
    elif op == "merge_dup" and merges:
        r = rng.randrange(len(merges))
        merges.insert(rng.randint(0, len(merges)), merges[r])
        desc = f"merge {r} repeated"
    elif op == "added_id" and added:
        t = rng.choice(added)
        if isinstance(t, dict):
            t["id"] = rng.choice(BAD_IDS)
        desc = f"added token id = {t.get('id') if isinstance(t, dict) else t!r}"
    elif op == "added_field" and added:
        t = rng.choice(added)
        if isinstance(t, dict):
            f = rng.choice(("content", "special", "normalized", "lstrip", "rstrip", "single_word", "id"))
            t[f] = rng.choice(WRONG_VALUES)
            desc = f"added token {f} = {t[f]!r}"
    elif op == "added_dup" and added:
        t = dict(rng.choice(added))
        t["id"] = rng.choice(BAD_IDS + (len(vocab) + len(added),))
        added.append(t)
        desc = f"added token {t.get('content')!r} repeated with id {t['id']!r}"
    elif op == "added_vocab" and keys:
        k = rng.choice(keys)
        added.append({"id": rng.choice((vocab[k], len(vocab), 0)), "content": k, "special": rng.random() < 0.5})
        desc = f"vocabulary token {k!r} added as an added token"
    elif op == "template":
        pp = d.get("post_processor")
        stages = [n for _, n in _walk(pp) if isinstance(n, dict) and n.get("type") == "TemplateProcessing"]
        if not stages:
            stages = [{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "X", "type_id": 0}},
                                                               {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [], "special_tokens": {"X": {"id": "X", "ids": [0], "tokens": ["X"]}}}]
            d["post_processor"] = stages[0]
        st = stages[0]
        how = rng.choice(("ids", "ids", "single", "specials", "item"))
        if how == "ids":
            specials = st.get("special_tokens") or {"X": {"id": "X", "ids": [0], "tokens": ["X"]}}
            st["special_tokens"] = specials
            name = rng.choice(list(specials))
            v = rng.choice(BAD_IDS + ([], [1, 2], "7"))
            if isinstance(specials[name], dict):
                specials[name]["ids"] = v if isinstance(v, list) else [v]
            desc = f"post_processor special token {name!r} ids = {v!r}"
        elif how == "single":
            st["single"] = rng.choice(WRONG_VALUES)
            desc = f"post_processor.single = {st['single']!r}"
        elif how == "specials":
            st["special_tokens"] = rng.choice(WRONG_VALUES)
            desc = f"post_processor.special_tokens = {st['special_tokens']!r}"
        else:
            item = rng.choice(({"SpecialToken": 5}, {"Sequence": "A"}, {"Sequence": {"id": "B"}}, {"Other": {}},
                               {"SpecialToken": {"id": "nope"}}, [], {"SpecialToken": {"id": None}}))
            if not isinstance(st.get("single"), list):
                st["single"] = []
            st["single"].insert(0, item)
            desc = f"post_processor.single item {item!r}"
    elif op == "pattern":
        split = {"type": "Split", "pattern": {rng.choice(("Regex", "String")): rng.choice(BAD_PATTERNS)},
                 "behavior": rng.choice(("Isolated", "Removed", "MergedWithNext", "Contiguous", "Nope", 3)),
                 "invert": rng.choice((False, True, "yes"))}
        pre = d.get("pre_tokenizer")
        if isinstance(pre, dict) and pre.get("type") == "Sequence" and isinstance(pre.get("pretokenizers"), list):
            pre["pretokenizers"].insert(0, split)
        else:
            d["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [split] + ([pre] if pre else [])}
        desc = f"pre_tokenizer Split {split!r}"
    elif op == "stage_field":
        stage = rng.choice(("decoder", "normalizer", "pre_tokenizer"))
        new = rng.choice({
            "decoder": ({"type": "Replace", "pattern": {"String": "\u2581"}, "content": rng.choice(WRONG_VALUES)},
                        {"type": "Strip", "content": rng.choice(WRONG_VALUES), "start": 1, "stop": 0},
                        {"type": "Strip", "content": " ", "start": rng.choice(WRONG_VALUES), "stop": 0},
                        {"type": "Strip", "content": " ", "start": 0, "stop": rng.choice(BAD_IDS)},
                        {"type": "Metaspace", "replacement": rng.choice(WRONG_VALUES)},
                        {"type": "Metaspace", "prepend_scheme": rng.choice(WRONG_VALUES)},
                        {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": rng.choice(WRONG_VALUES)}),
            "normalizer": ({"type": "Prepend", "prepend": rng.choice(WRONG_VALUES)},
                           {"type": "Replace", "pattern": {"String": rng.choice(WRONG_VALUES)}, "content": "x"},
                           {"type": "Replace", "pattern": {"String": " "}, "content": rng.choice(WRONG_VALUES)},
                           {"type": "NFC"}, {"type": "NFKC"},
                           {"type": "Sequence", "normalizers": rng.choice(WRONG_VALUES)}),
            "pre_tokenizer": ({"type": "Digits", "individual_digits": rng.choice(WRONG_VALUES)},
                              {"type": "ByteLevel", "add_prefix_space": rng.choice(WRONG_VALUES),
                               "use_regex": rng.choice(WRONG_VALUES)},
                              {"type": "Metaspace", "replacement": rng.choice(WRONG_VALUES),
                               "split": rng.choice(WRONG_VALUES)},
                              {"type": "Sequence", "pretokenizers": rng.choice(WRONG_VALUES)}),
        }[stage])
        old = d.get(stage)
        if isinstance(old, dict) and old.get("type") == "Sequence" and rng.random() < 0.7:
            listkey = {"decoder": "decoders", "normalizer": "normalizers", "pre_tokenizer": "pretokenizers"}[stage]
            if isinstance(old.get(listkey), list):
                old[listkey].insert(rng.randint(0, len(old[listkey])), new)
        else:
            d[stage] = new
        desc = f"{stage} stage {new!r}"
    else:
        f = rng.choice(("type", "unk_token", "byte_fallback", "fuse_unk", "ignore_merges", "dropout",
                        "continuing_subword_prefix", "end_of_word_suffix", "vocab", "merges"))
        v = rng.choice(WRONG_VALUES + (rng.choice(keys) if keys else "a", "<unk>", "Unigram", "WordPiece", 0.5))
        if isinstance(d.get("model"), dict):
            d["model"][f] = v
        desc = f"model.{f} = {v!r}"
    return json.dumps(d, ensure_ascii=rng.random() < 0.2).encode("utf-8"), desc


# --------------------------------------------------------------------------------------------
# units.txt and tokens.json
# --------------------------------------------------------------------------------------------

def units_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    lines = data.split(b"\n")
    n = len(lines)
    k = rng.randrange(n)
    op = rng.choice(("id", "id", "fields", "dup", "delete", "piece", "bytes", "blank"))
    if op == "id":
        v = rng.choice((b"-1", b"1e9", b"1000000000", b"99999999999999999999", b"2147483648", b"18446744073709551616",
                        b"\xd9\xa3", b"0x10", b"", b"+5", b"007", b"0", b"%d" % n, b"%d" % (n * 1000), b"1.5"))
        piece = lines[k].rsplit(b" ", 1)[0] or b"x"
        lines[k] = piece + b" " + v
        desc = f"line {k + 1} id = {v!r}"
    elif op == "fields":
        lines[k] = rng.choice((b"a b c", b"a", b"a\tb", b" 5", b"a  5", b"\xe3\x80\x80 5", b"a\x0b5", b"a 5 "))
        desc = f"line {k + 1} = {lines[k]!r}"
    elif op == "dup":
        j = rng.randrange(n)
        lines.insert(j, lines[k])
        desc = f"line {k + 1} repeated at {j + 1}"
    elif op == "delete":
        del lines[k]
        desc = f"line {k + 1} deleted"
    elif op == "piece":
        p = rng.choice(("<unk>", "<blank>", "<sos/eos>", "\u2581", "\u2581\u2581", "\x00", "\ufeff", "😀",
                        "é" * 200))
        lines[k] = p.encode("utf-8") + b" " + (lines[k].rsplit(b" ", 1)[-1] or b"0")
        desc = f"line {k + 1} piece = {p[:10]!r}"
    elif op == "bytes":
        lines[k] = lines[k] + rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"))
        desc = f"line {k + 1}: invalid UTF-8 or NUL appended"
    else:
        lines.insert(k, rng.choice((b"", b" ", b"\r", b"\t\t")))
        desc = f"blank line at {k + 1}"
    return b"\n".join(lines), desc


def tokens_json_mutation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    toks = json.loads(data.decode("utf-8"))
    n = len(toks)
    k = rng.randrange(n)
    op = rng.choice(("value", "dup", "delete", "special", "top", "piece"))
    if op == "value":
        toks[k] = rng.choice(WRONG_VALUES)
        desc = f"entry {k} = {toks[k]!r}"
    elif op == "dup":
        toks.insert(rng.randrange(n), toks[k])
        desc = f"entry {k} repeated"
    elif op == "delete":
        del toks[k]
        desc = f"entry {k} deleted"
    elif op == "special":
        for s in ("<unk>", "<blank>", "<s>", "</s>"):
            if s in toks and rng.random() < 0.5:
                toks.remove(s)
        desc = "special tokens removed"
    elif op == "top":
        toks = rng.choice(({"a": 1}, [], "abc", 5, None, [[toks[0]]], {"tokens": toks}))
        desc = f"top level = {str(toks)[:40]}"
    else:
        toks[k] = rng.choice(("", " ", "@@", "@@@@", "a@@b", "<s>x</s>", "<unk><unk>", "\u2581", "你好@@", "A",
                              "'", "x" * 5000, "\x00", "\U0010ffff"))
        desc = f"entry {k} = {toks[k][:20]!r}"
    return json.dumps(toks, ensure_ascii=rng.random() < 0.3).encode("utf-8"), desc


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------

STRUCTURED = {"sentencepiece": spm_mutation, "tiktoken": tiktoken_mutation, "tokenizer.json": hf_mutation,
              "symbol_table": units_mutation, "funasr_char": tokens_json_mutation}


@dataclass
class Case:
    index: int
    seed: Seed
    mutation: str
    data: bytes = field(repr=False)


_BYTES_CACHE: dict[str, bytes] = {}


def _read(path: str) -> bytes:
    b = _BYTES_CACHE.get(path)
    if b is None:
        b = _BYTES_CACHE[path] = Path(path).read_bytes()
    return b


def make_case(seeds: list[Seed], master_seed: int, index: int) -> Case:
    """Case `index` of run `master_seed`: the kinds take turns; seed and mutation drawn from both."""
    rng = random.Random(f"{master_seed}:{index}")
    kinds = [k for k in KINDS if any(s.kind == k for s in seeds)]
    kind = kinds[index % len(kinds)]
    pool = [s for s in seeds if s.kind == kind]
    seed = rng.choices(pool, weights=[s.weight for s in pool])[0]
    data = _read(seed.path)
    descs: list[str] = []
    n_mutations = rng.choice((1, 1, 1, 2, 3))  # stacked: a change that only matters after another
    for _ in range(8 * n_mutations):  # a structured mutation may not apply to this file: try again
        try:
            if rng.random() < 0.45:
                others = [_read(s.path) for s in pool if s is not seed]
                mutated, desc = byte_mutation(data, rng, others)
            else:
                mutated, desc = STRUCTURED[kind](data, rng)
        except (ValueError, IndexError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            continue  # the file does not have the part this mutation changes
        if mutated != data:
            data = mutated
            descs.append(desc)
            if len(descs) == n_mutations:
                break
    if not descs:
        return Case(index, seed, "truncated by one byte", data[:-1])
    return Case(index, seed, "; ".join(descs), data)


# --------------------------------------------------------------------------------------------
# the worker: runs cases, one JSON line each
# --------------------------------------------------------------------------------------------

def _load(kind: str, path: str, arg: str):
    import tltok_jit

    if kind == "sentencepiece":
        return tltok_jit.build_tokenizer(tltok_jit.TokenizerSpec("sentencepiece", {"model": path}))
    if kind == "tiktoken":
        return tltok_jit.Encoding.from_tiktoken_file(path, name=arg)
    if kind == "tokenizer.json":
        return tltok_jit.from_file(path)
    if kind == "symbol_table":
        return tltok_jit.build_tokenizer(tltok_jit.TokenizerSpec("symbol_table", {"units": path}))
    return tltok_jit.build_tokenizer(tltok_jit.TokenizerSpec("funasr_char", {"tokens": path}))


class CheckFailed(Exception):
    """A loaded file that does not encode or decode as it must."""


def _exercise(obj, kind: str, rng: random.Random) -> None:
    """Encode and decode TEXTS and random ids with a loaded tokenizer; raises on any failure."""
    import tltok_jit

    if isinstance(obj, tltok_jit.Encoding):
        n = obj.n_vocab
        for t in TEXTS:
            ids = obj.encode(t, allowed_special="all")
            text = obj.decode(ids)
            if kind == "tiktoken" and text != t:
                raise CheckFailed(f"decode(encode({t[:30]!r})) == {text[:30]!r}")
            obj.encode_ordinary(t)
            obj.decode_bytes(ids)
            if ids and any(not 0 <= i < n for i in ids):
                raise CheckFailed(f"encode({t[:30]!r}) gave an id outside 0..{n - 1}")
        import pyarrow as pa

        rows = obj.encode_arrow(pa.array(TEXTS[:6]), num_threads=1, allowed_special="all").to_pylist()
        if rows != [obj.encode(t, allowed_special="all") for t in TEXTS[:6]]:
            raise CheckFailed("encode_arrow differs from encode")
        decode_ids = obj.decode
    else:
        n = obj.vocab_size
        if obj.supports_encode:
            for t in TEXTS:
                try:
                    ids = obj.encode(t)
                except tltok_jit.TokenizerError as e:
                    if kind == "funasr_char" and "<unk>" in str(e):
                        continue  # documented: a character no token covers, and no <unk>
                    raise
                if any(not 0 <= i < n for i in ids):
                    raise CheckFailed(f"encode({t[:30]!r}) gave an id outside 0..{n - 1}")
                obj.decode(ids)
                obj.token_pieces(ids)
                if kind == "sentencepiece":
                    obj.normalize(t)
            if kind in ("sentencepiece", "tokenizer.json"):  # tokenizer.json here: a WordPiece file
                import pyarrow as pa

                rows = obj.encode_arrow(pa.array(TEXTS[:6]), num_threads=1).to_pylist()
                if rows != [obj.encode(t) for t in TEXTS[:6]]:
                    raise CheckFailed("encode_arrow differs from encode")
        decode_ids = obj.decode
    ids = [rng.randrange(n) for _ in range(48)] + [0, n - 1]
    try:
        decode_ids(ids)
    except (tltok_jit.UnknownTokenError, tltok_jit.TokenIdError):
        # ids the vocabulary leaves free: refused by name; the others must decode
        good = []
        for i in ids:
            try:
                decode_ids([i])
                good.append(i)
            except (tltok_jit.UnknownTokenError, tltok_jit.TokenIdError):
                pass
        decode_ids(good)
    state: dict = {}
    for i in ids[:16]:
        try:
            obj.decode_incremental([i], state)
        except (tltok_jit.UnknownTokenError, tltok_jit.TokenIdError):
            pass


def run_case(kind: str, path: str, arg: str, rng_seed: str) -> dict:
    """Load the file at `path` and exercise it: the outcome as a dict (see the module docstring)."""
    import warnings

    import tltok_jit

    out: dict = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = _load(kind, path, arg)
            if isinstance(obj, tltok_jit.Encoding):
                obj.encode_ordinary("x")  # the tables are compiled here, within the load
    except tltok_jit.TltokError as e:
        msg = str(e)
        out.update(error=type(e).__name__, message=msg[:400])
        if path not in msg:
            out.update(outcome="fail", why="the error does not name the file")
        else:
            out["outcome"] = "refused"
        return out
    except Exception as e:  # noqa: BLE001  (any other exception type is the failure recorded)
        out.update(outcome="fail", why="load raised a non-TltokError", error=type(e).__name__,
                   message=str(e)[:400], traceback=traceback.format_exc()[-3000:])
        return out
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _exercise(obj, kind, random.Random(rng_seed))
    except Exception as e:  # noqa: BLE001
        out.update(outcome="fail", why="loaded, then encode/decode failed", error=type(e).__name__,
                   message=str(e)[:400], traceback=traceback.format_exc()[-3000:])
        return out
    out["outcome"] = "ok"
    return out


def worker_main(config_path: str) -> None:
    """Answer case numbers read from stdin with one JSON line each (on the original stdout; the
    library's own prints go to stderr)."""
    import faulthandler
    import resource

    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    faulthandler.enable()
    cfg = json.loads(Path(config_path).read_text())
    seeds = [Seed(**s) for s in cfg["seeds"]]
    workdir = Path(cfg["workdir"])
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    if cfg.get("check_seeds"):
        results = {}
        for s in seeds:
            results[s.name] = run_case(s.kind, s.path, s.arg, "seed")
        proto.write(json.dumps({"seeds": results}) + "\n")
    else:
        import tltok_jit  # noqa: F401
        proto.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        index = int(line)
        if index < 0:  # the harness's own probes (tests/test_file_fuzz.py)
            probe = {-1: "segfault", -2: "hang", -3: "exception"}[index]
            if probe == "segfault":
                import ctypes

                ctypes.string_at(0)
            elif probe == "hang":
                time.sleep(3600)
            raise RuntimeError("probe")
        case = make_case(seeds, cfg["master_seed"], index)
        path = workdir / f"case{case.seed.suffix}"
        if case.seed.kind == "tokenizer.json":
            path = workdir / "case" / "tokenizer.json"
            path.parent.mkdir(exist_ok=True)
        path.write_bytes(case.data)
        result = run_case(case.seed.kind, str(path), case.seed.arg, f"{cfg['master_seed']}:{index}:ids")
        result.update(index=index, kind=case.seed.kind, seed=case.seed.name, mutation=case.mutation)
        proto.write(json.dumps(result) + "\n")


# --------------------------------------------------------------------------------------------
# the runner: one worker at a time, restarted after a crash or a hang
# --------------------------------------------------------------------------------------------

def worker_env() -> dict:
    env = dict(os.environ)
    env.update(TLTOK_NO_TABLE_CACHE="1", TLTOK_COMPILE="foreground", TIKTOKEN_CACHE_DIR="", TLTOK_OFFLINE="1",
               PYTHONFAULTHANDLER="1")
    env.setdefault("TLTOK_DATA", str(TOKENIZERS))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


class Runner:
    """Runs cases in a worker process (started on demand, one at a time)."""

    def __init__(self, seeds: list[Seed], master_seed: int, workdir: Path, *,
                 case_timeout: float = CASE_TIMEOUT, check_seeds: bool = False):
        self.seeds = seeds
        self.master_seed = master_seed
        self.workdir = workdir
        self.case_timeout = case_timeout
        self.check_seeds = check_seeds
        self.proc: subprocess.Popen | None = None
        self.seed_results: dict | None = None
        self.restarts = 0
        self._cfg = workdir / "fuzz-config.json"
        self._stderr = workdir / "worker-stderr.log"

    def _start(self) -> None:
        self._cfg.write_text(json.dumps({"seeds": [s.__dict__ for s in self.seeds], "workdir": str(self.workdir),
                                         "master_seed": self.master_seed,
                                         "check_seeds": self.check_seeds and self.seed_results is None}))
        err = open(self._stderr, "ab")
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", str(self._cfg)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=worker_env(),
                                     cwd=str(REPO))
        err.close()
        first = self._read_line(START_TIMEOUT)
        if not first:
            raise RuntimeError(f"the fuzz worker did not start; its stderr: {self._stderr}")
        msg = json.loads(first)
        if "seeds" in msg:
            self.seed_results = msg["seeds"]

    def _read_line(self, timeout: float) -> str | None:
        """The worker's next line; None on a timeout, "" when it closed its output (died)."""
        assert self.proc is not None and self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(timeout):
                return None
            return self.proc.stdout.readline().decode("utf-8")
        finally:
            sel.close()

    def _stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                if f is not None:
                    f.close()
            self.proc = None

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self._stop()

    def run(self, index: int) -> dict:
        """The outcome of case `index` (a crash or hang restarts the worker for the next case)."""
        if self.proc is None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        t0 = time.monotonic()
        try:
            self.proc.stdin.write(f"{index}\n".encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self._read_line(self.case_timeout)
        if line:
            r = json.loads(line)
            r["seconds"] = round(time.monotonic() - t0, 3)
            return r
        hung = line is None
        if hung:
            self.proc.kill()
        code = self.proc.wait()
        self._stop()
        self.restarts += 1
        r = {"index": index, "outcome": "hang" if hung else "crash", "seconds": round(time.monotonic() - t0, 3),
             "why": f"no answer within {self.case_timeout} s" if hung else f"worker died (exit status {code})",
             "stderr_tail": self._stderr_tail()}
        if index >= 0:
            case = make_case(self.seeds, self.master_seed, index)
            r.update(kind=case.seed.kind, seed=case.seed.name, mutation=case.mutation)
            kept = self.workdir / f"crash-{self.master_seed}-{index}{case.seed.suffix}"
            kept.write_bytes(case.data)
            r["file"] = str(kept)
        return r

    def _stderr_tail(self) -> str:
        try:
            return self._stderr.read_bytes()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""


def run_cases(indices, seeds: list[Seed], master_seed: int, workdir: Path, *, case_timeout: float = CASE_TIMEOUT,
              check_seeds: bool = True, progress=None) -> tuple[list[dict], dict | None]:
    """Every case's outcome, and the seeds' own (loaded once by the first worker)."""
    runner = Runner(seeds, master_seed, workdir, case_timeout=case_timeout, check_seeds=check_seeds)
    results = []
    try:
        for i in indices:
            results.append(runner.run(i))
            if progress is not None:
                progress(results[-1])
    finally:
        runner.close()
    return results, runner.seed_results


def summary(results: list[dict]) -> dict[str, Counter]:
    """kind -> Counter of outcomes (and of the refusing error classes, as 'refused:<Class>')."""
    out: dict[str, Counter] = {}
    for r in results:
        c = out.setdefault(r.get("kind", "?"), Counter())
        c[r["outcome"]] += 1
        if r["outcome"] == "refused":
            c["refused:" + r["error"]] += 1
    return out


def failures(results: list[dict]) -> list[dict]:
    return [r for r in results if r["outcome"] not in ("ok", "refused")]


def format_failure(r: dict) -> str:
    lines = [f"case {r['index']} [{r.get('kind')} {r.get('seed')}: {r.get('mutation')}] -> {r['outcome']}: "
             f"{r.get('why', '')} {r.get('error', '')}: {r.get('message', '')}"]
    if r.get("traceback"):
        lines.append(r["traceback"])
    if r.get("stderr_tail"):
        lines.append(r["stderr_tail"])
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", metavar="CONFIG")
    ap.add_argument("--replay", type=int, metavar="INDEX", help="run one case in this process and print it")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--full", action="store_true", help="also the full-size real files as seeds")
    ap.add_argument("--keep", metavar="PATH", help="with --replay: write the mutated file here")
    args = ap.parse_args(argv)
    if args.worker:
        worker_main(args.worker)
        return 0
    if args.replay is not None:
        workdir = Path(tempfile.mkdtemp(prefix="tltok-fuzz-"))
        seeds = prepare_seeds(workdir / "seeds", full=args.full)
        case = make_case(seeds, args.seed, args.replay)
        path = Path(args.keep) if args.keep else workdir / f"case{case.seed.suffix}"
        path.write_bytes(case.data)
        print(f"case {args.replay}: {case.seed.kind} {case.seed.name}: {case.mutation} -> {path}")
        os.environ.update({k: v for k, v in worker_env().items() if k.startswith(("TLTOK", "TIKTOKEN"))})
        print(json.dumps(run_case(case.seed.kind, str(path), case.seed.arg, f"{args.seed}:{args.replay}:ids"),
                         indent=1))
        return 0
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
