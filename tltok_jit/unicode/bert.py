r"""Character tables of `tokenizers`' BertNormalizer and BertPreTokenizer, as flat arrays for the kernels.

A code point's entry is `stage2[stage1[cp >> 8] * 256 + (cp & 255)]` (uint64):

    bits 0-7    flags: F_DROP (clean_text removes it), F_SPACE (whitespace: clean_text makes it ' ',
                the pre-tokenizer splits on it), F_PUNCT (BertPreTokenizer isolates it), F_MARK
                (a nonspacing mark: accent stripping drops it), F_CJK (handle_chinese_chars spaces it),
                F_COMB (a combining mark: the StripAccents normalizer drops it), F_RE_WORD / F_RE_SPACE
                (\w / \s in the Whitespace pre-tokenizer's regex)
    bits 8-15   canonical combining class in HF's NFD (0: a starter)
    bits 16-35  its NFD decomposition: entry e of `seq` (0: none)
    bits 36-55  its lowercase: entry e of `seq` (0: itself)

Entry e is seq[seq_off[e]:seq_off[e + 1]] (code points). The sets come from `bert_data` (measured from
`tokenizers` by `bert_generate`, independent of the Python version); decompositions and combining
classes are `unicodedata`'s for the characters those sets name (values that never change once
assigned). Everything a kernel indexes is validated in `_validate`.

Measured differences from any one Unicode version (tokenizers 0.23.3; `tests/test_wordpiece.py`):
unassigned code points are kept by clean_text (its "other" set has no Cn) and 13 format characters
newer than its tables are kept too; U+1734 is a nonspacing mark and U+166D, U+111C9 punctuation (their
old categories), while 104 newer punctuation characters are not punctuation and 384 newer marks are
not stripped; NFD does not know 99 newer combining characters (no class, no decomposition: U+11938);
lowercase is Rust's Unicode 17 (55 mappings beyond Python 3.11's unicodedata 14: Garay, U+A7CB...).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import bert_data as D

F_DROP = 1
F_SPACE = 2
F_PUNCT = 4
F_MARK = 8
F_CJK = 16
F_COMB = 32  # a combining mark to the StripAccents normalizer (Mn, Mc, Me of its tables)
F_RE_WORD = 64  # \w to the Whitespace pre-tokenizer's regex
F_RE_SPACE = 128  # \s to it

CCC_SHIFT = 8
DEC_SHIFT = 16
LOW_SHIFT = 36
ENTRY_MASK = (1 << 20) - 1
MAX_EXPAND = 4  # code points of a decomposition or a lowercase mapping, at most

# HF's is_chinese_char (normalizers/bert.rs): these blocks, whatever is assigned in them
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
              (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


@dataclass(frozen=True)
class BertTables:
    stage1: np.ndarray   # uint16[4352]
    stage2: np.ndarray   # uint64[k * 256]
    seq: np.ndarray      # int32 code points
    seq_off: np.ndarray  # int64[entries + 1]
    max_expand: int      # the longest entry (code points)


def _cps(ranges) -> np.ndarray:
    parts = [np.arange(r[0], r[-1] + 1, dtype=np.int64) for r in ranges]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


@lru_cache(maxsize=1)
def bert_tables() -> BertTables:
    """The tables (built once per process, read-only)."""
    info = np.zeros(0x110000, np.uint64)
    for flag, ranges in ((F_DROP, D.DROP), (F_SPACE, D.SPACE), (F_PUNCT, D.PUNCT), (F_MARK, D.MARK),
                         (F_CJK, CJK_RANGES), (F_COMB, D.COMBINING), (F_RE_WORD, D.RE_WORD),
                         (F_RE_SPACE, D.RE_SPACE)):
        info[_cps(ranges)] |= np.uint64(flag)
    for cp in _cps(D.NONSTARTER).tolist():
        info[cp] |= np.uint64(unicodedata.combining(chr(cp)) << CCC_SHIFT)
    seqs: list[list[int]] = [[]]
    for cp in _cps(D.DECOMP).tolist():
        seqs.append([ord(x) for x in unicodedata.normalize("NFD", chr(cp))])
        info[cp] |= np.uint64(len(seqs) - 1) << np.uint64(DEC_SHIFT)
    lower = {}
    for start, count, delta in D.LOWER_RUNS:
        for cp in range(start, start + count):
            lower[cp] = [cp + delta]
    for cp, s in D.LOWER_MULTI.items():
        lower[cp] = [ord(x) for x in s]
    for cp in sorted(lower):
        seqs.append(lower[cp])
        info[cp] |= np.uint64(len(seqs) - 1) << np.uint64(LOW_SHIFT)
    seq_off = np.zeros(len(seqs) + 1, np.int64)
    np.cumsum([len(s) for s in seqs], out=seq_off[1:])
    seq = np.array([c for s in seqs for c in s], np.int32)
    rows = info.reshape(0x1100, 256)
    index: dict[bytes, int] = {}
    stage1 = np.empty(0x1100, np.uint16)
    for b in range(0x1100):
        stage1[b] = index.setdefault(rows[b].tobytes(), len(index))
    keep = np.zeros(len(index), np.int64)
    keep[stage1] = np.arange(0x1100)  # a row holding each distinct block
    t = BertTables(stage1=stage1, stage2=np.ascontiguousarray(rows[keep].reshape(-1)),
                   seq=seq, seq_off=seq_off, max_expand=max(len(s) for s in seqs))
    _validate(t)
    for a in (t.stage1, t.stage2, t.seq, t.seq_off):
        a.flags.writeable = False
    return t


def _validate(t: BertTables) -> None:
    """What the kernels index without bounds checks."""
    if len(t.stage1) != 0x1100 or len(t.stage2) % 256 or int(t.stage1.max()) * 256 + 255 >= len(t.stage2):
        raise ValueError("corrupt BERT character table (stages)")
    n_entries = len(t.seq_off) - 1
    dec = (t.stage2 >> np.uint64(DEC_SHIFT)) & np.uint64(ENTRY_MASK)
    low = (t.stage2 >> np.uint64(LOW_SHIFT)) & np.uint64(ENTRY_MASK)
    if int(dec.max()) >= n_entries or int(low.max()) >= n_entries:
        raise ValueError("corrupt BERT character table (entries)")
    if t.seq_off[0] != 0 or (np.diff(t.seq_off) < 0).any() or t.seq_off[-1] != len(t.seq):
        raise ValueError("corrupt BERT character table (offsets)")
    if t.max_expand > MAX_EXPAND:  # the kernel's buffers hold MAX_EXPAND code points per character
        raise ValueError(f"BERT character table: an entry of {t.max_expand} code points (at most {MAX_EXPAND})")
    if len(t.seq) and (int(t.seq.min()) < 0 or int(t.seq.max()) > 0x10FFFF
                       or ((t.seq >= 0xD800) & (t.seq < 0xE000)).any()):
        raise ValueError("corrupt BERT character table (code points)")


def char_info(cp: int) -> int:
    """The uint64 entry of one code point (Python side, for tests)."""
    t = bert_tables()
    return int(t.stage2[int(t.stage1[cp >> 8]) * 256 + (cp & 255)])
