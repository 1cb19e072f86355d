"""scan.ascii_piece_end, the piece loop's inline fast path for common ASCII pieces (words, punctuation
before a space, LF, indentation), against every scanner: where it answers, each pattern's scanner
ends the piece at the same byte (tested at every position of
random and real text, and at segment ends); and whole encodes of the shapes around its edges still
equal tiktoken's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SHARED
from tltok_jit.kernels import scan
from tltok_jit.kernels.jit import njit
from tltok_jit.unicode.classes import class_tables

STAGE1, STAGE2, _ = class_tables()
SCANNER_KINDS = list(range(scan.PAT_WHOLE))


ANY_PREFIX = {kind: kind not in (scan.PAT_GPT2, scan.PAT_GPT2_DIGITS) for kind in SCANNER_KINDS}  # as the piece loop
TAILS = {scan.PAT_GPT2: scan.TAIL_NONE, scan.PAT_GPT2_DIGITS: scan.TAIL_NONE, scan.PAT_CL100K: scan.TAIL_CRLF,
         scan.PAT_LLAMA3: scan.TAIL_CRLF, scan.PAT_QWEN2: scan.TAIL_CRLF, scan.PAT_O200K: scan.TAIL_CRLF_SLASH,
         scan.PAT_TEKKEN: scan.TAIL_CRLF_SLASH}  # read off each pattern's punctuation alternative


CASED = {kind: scan.LETTERS_ANY for kind in SCANNER_KINDS}  # read off each pattern's letter alternatives
CASED[scan.PAT_O200K] = scan.LETTERS_CASED_SUFFIX
CASED[scan.PAT_TEKKEN] = scan.LETTERS_CASED
DIGITS = {scan.PAT_GPT2: scan.DIGITS_RUN, scan.PAT_GPT2_DIGITS: scan.DIGITS_ONE, scan.PAT_CL100K: scan.DIGITS_THREE,
          scan.PAT_LLAMA3: scan.DIGITS_THREE, scan.PAT_QWEN2: scan.DIGITS_ONE, scan.PAT_O200K: scan.DIGITS_THREE,
          scan.PAT_TEKKEN: scan.DIGITS_ONE}  # read off each pattern's digit alternative (and SmolLM2's split)


def _rules(kind):
    return ANY_PREFIX[kind], TAILS[kind], CASED[kind], DIGITS[kind]


@njit(cache=False)
def _rules_of(kind):
    return scan.ascii_rules(kind)


def test_every_scanner_kind_has_its_rules():
    assert sorted(TAILS) == sorted(CASED) == sorted(DIGITS) == SCANNER_KINDS
    assert all(_rules_of(k) == _rules(k) for k in SCANNER_KINDS)


@njit(cache=False)
def _fast_ends(buf, end, any_prefix, tail, cased, digits):
    """ascii_piece_end at every position below `end` (-1 where it does not answer)."""
    p = scan.data_ptr(buf)
    out = np.full(end, -1, dtype=np.int64)
    for pos in range(end):
        out[pos] = scan.ascii_piece_end(p, np.int64(pos), np.int64(end), any_prefix, tail, cased, digits)
    return out


def _check(data: bytes, end: int | None = None) -> int:
    """Compare at every position; returns how many positions the fast path answered."""
    buf = np.frombuffer(data + b"\0" * 8, dtype=np.uint8)  # slack past `end`: loads must stay inside it
    end = len(data) if end is None else end
    fast = {}
    answered = 0
    for kind in SCANNER_KINDS:
        key = _rules(kind)
        if key not in fast:
            fast[key] = _fast_ends(buf, end, *key)
        ends = fast[key]
        for pos in range(end):
            e = int(ends[pos])
            if e < 0:
                continue
            answered += 1
            assert pos < e <= end
            got = scan.next_piece(kind, buf, pos, end, STAGE1, STAGE2)
            assert got == e, (kind, data[pos:e], data[pos:got], data[max(0, pos - 5):e + 5])
    return answered


# weighted: runs of spaces, words and punctuation next to digits, LF and non-ASCII letters
_PIECES = ["a", "z", "A", "Z", "Q", " ", " ", " ", " ", "'", "\n", "\n", "\r", "\t", "0", "1", "9", ",", ".", ";", "/",
           "-", "_", "(", '"', "é", "\u00a0", "ß", "中", "É", "ʼ", "\x0b", "\x1c", "ab", "Word", "  ", "1 ",
           "):\n", "\n\n", "\n    ", "._", "\x01", "\x7f", "\x0c", "…", "\u0301", "'s", "/\n", "HTTP", "Value",
           "getX", "12", "345", "٣", "\r\n", "\t\t", " \n", "'t", "(s", "_x", "'S", "'re", "'LL", "n't", "ſ", "'ſ"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join))
def test_fast_path_agrees_with_every_scanner(text):
    data = text.encode("utf-8")
    _check(data)
    if len(data) > 2:
        _check(data, len(data) - 1)  # a segment ending inside the text (an added token follows)


def test_fast_path_edges():
    cases = [b"  12", b"   1 x", b" 1", b"\n1", b"    return x", b"  \tx", b"   \n", b"  ", b"a,\nb", b"a, b", b"x = 1", b" -- ", b"\nfoo", b"\n\nfoo",
             b"\n ", b"..", b"', x", b"(self.x)", b"._name", b"\tword", b"'sam", b"0abc", b"-Word", b"\x1fword", b"hello", b" hello", b"Hello", b" Hello, world", b"word's", b"don't", b"Word's", b"wordWord",
             b"HELLO", b" A b", b"abc1", b"abc_def", b"caf\xc3\xa9", b"a\xc2\xa0b", b" ", b"  word", b"x",
             b"end.", b"tab\tword", b"line\nword", b"a/b", b"I'm", b"ab" * 40 + b"!",
             b"def f(x):\n    return x._y\n\n\n    z", b"a):\r\n  b", b"x.\n/\n y", b"((x", b" ('s", b"''s", b"(\x01",
             b"(\tx", b"(\x0bx", b"(\x0c", b":\n/x", b" .x", b".1", b"..2", b"\n\n\t x", b"\n\n  \n x", b"\n\n  ",
             b"(\xe2\x80\xa6", b"(\xcc\x81x", b" (\n", b"a;\r\rb", b"\n \xc2\xa0x"]
    answered = sum(_check(c) for c in cases)
    assert answered >= 20  # the fast path does answer (a path that never answers tests nothing)
    o200k, cl100k, gpt2, qwen2 = (_rules(k) for k in (scan.PAT_O200K, scan.PAT_CL100K, scan.PAT_GPT2, scan.PAT_QWEN2))
    word = np.frombuffer(b"word's\0\0\0\0\0\0\0\0", dtype=np.uint8)
    assert _fast_ends(word, 6, *o200k)[0] == 6  # o200k's words take the contraction suffix
    assert _fast_ends(word, 6, *cl100k)[0] == 4  # cl100k's do not: "'s" is a piece of its own
    assert _fast_ends(word, 6, *cl100k)[4] == 6
    buf = np.frombuffer(b"(self) 'sam\0\0\0\0\0\0\0\0", dtype=np.uint8)
    assert _fast_ends(buf, 11, *cl100k)[0] == 5  # "(self": one piece in cl100k
    assert _fast_ends(buf, 11, *gpt2)[0] == 1  # GPT-2 has no prefix: "(" then "self"
    assert _fast_ends(buf, 11, *cl100k)[7] == 9  # "'sam": cl100k takes the contraction "'s" first
    code = b"):\n    x._y\n\n  z\0\0\0\0\0\0\0\0"
    ends = _fast_ends(np.frombuffer(code, dtype=np.uint8), len(code) - 8, *o200k)
    assert ends[0] == 3 and ends[8] == 10 and ends[11] == 13  # "):\n", "._", "\n\n" before indentation
    ends = _fast_ends(np.frombuffer(code, dtype=np.uint8), len(code) - 8, *gpt2)
    assert ends[0] == 2 and ends[11] == 14  # GPT-2: "):" then LF; "\n\n " (its last space goes with "z")
    words = b"getValue HTTPServer CHAPTER I\0\0\0\0\0\0\0\0"
    ends = _fast_ends(np.frombuffer(words, dtype=np.uint8), len(words) - 8, *o200k)
    assert (ends[0], ends[3], ends[8], ends[19], ends[27]) == (3, 8, 19, 27, 29)
    ends = _fast_ends(np.frombuffer(words, dtype=np.uint8), len(words) - 8, *cl100k)
    assert (ends[0], ends[8], ends[19], ends[27]) == (8, 19, 27, 29)  # `\p{L}+`: case does not split
    num = b"x = 12345;\0\0\0\0\0\0\0\0"
    for rules, want in ((o200k, (4, 7, 9)), (gpt2, (9, 9, 9)), (qwen2, (4, 5, 8))):  # " ", "123" / " 12345" / "1"
        ends = _fast_ends(np.frombuffer(num, dtype=np.uint8), len(num) - 8, *rules)
        assert (ends[3], ends[4], ends[7]) == want


@pytest.mark.parametrize("name", ["english-war-and-peace.txt", "udhr/en.txt"])
def test_fast_path_on_real_text(name):
    path = SHARED / "corpora" / name
    if not path.is_file():
        pytest.skip(f"{path} missing")
    data = path.read_bytes()[:60_000]
    assert _check(data) > 1_000


@pytest.mark.parametrize("encoding", ["r50k_base", "cl100k_base", "o200k_base"])
def test_encodes_around_the_fast_path(encoding, ours, tiktoken_oracle):
    enc, oracle = ours(encoding), tiktoken_oracle(encoding)
    texts = ["Hello world's end", "wordWord HELLO", " A b c", "abc1 x2", "caf\u00e9 na\u00efve", "it'S we'LL",
             "one, two; three.", "a" * 100 + "'s", "Zz" * 30, "tab\tword\nline  end"]
    for t in texts:
        assert enc.encode_ordinary(t) == oracle.encode_ordinary(t), t
    assert enc.encode_ordinary_batch(texts) == oracle.encode_ordinary_batch(texts)


def test_fast_path_on_real_code():
    """Python source (the standard library's argparse): LF runs before indentation, `):` + LF, `._`."""
    import argparse

    data = open(argparse.__file__, "rb").read()[:60_000]
    assert _check(data) > 5_000
