"""The hand-written pretokenization scanners (tltok_jit.kernels.scan) against three oracles.

1. The `regex` module running tiktoken's own pattern text (`$` replaced by `\\Z`: Python's `$` also
   matches before a final newline, Rust's only at the end). Its Unicode tables are a different
   version than ours (16.0, what tiktoken 0.14's Rust regex uses), so these comparisons are restricted
   to code points whose class is the same in both (`AGREE`); corpus files substitute U+FFFD for the
   others (none occur in the shared corpora today).
2. tiktoken itself as an exact piece oracle: an Encoding whose vocabulary holds every substring of
   the text (plus the 256 bytes) encodes every regex piece as ONE token (whole-piece lookup), so
   decoding the ids gives tiktoken's own piece boundaries, Unicode 16 classes included.
3. tiktoken with the real rank files: `encode_ordinary(text)` must equal the concatenation over our
   pieces of `encode_single_piece(piece)`.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SHARED, get_tiktoken_oracle, missing_reason, tiktoken_params
from naive import split_regex
from tltok_jit.model import patterns as tltok_patterns
from tltok_jit.kernels import scan
from tltok_jit.unicode.classes import (
    CLS_LL,
    CLS_LM,
    CLS_LO,
    CLS_LT,
    CLS_LU,
    CLS_MARK,
    CLS_NUMBER,
    CLS_OTHER,
    CLS_SPACE,
    class_tables,
)

STAGE1, STAGE2, _ = class_tables()
KINDS = [scan.PAT_GPT2, scan.PAT_CL100K, scan.PAT_O200K]
KIND_IDS = ["gpt2", "cl100k", "o200k"]
ENCODING = {scan.PAT_GPT2: "r50k_base", scan.PAT_CL100K: "cl100k_base", scan.PAT_O200K: "o200k_base"}
NEXT = {scan.PAT_GPT2: scan.next_piece_gpt2, scan.PAT_CL100K: scan.next_piece_cl100k,
        scan.PAT_O200K: scan.next_piece_o200k}


# ------------------------------------------------------------------------------------------------
# our side
# ------------------------------------------------------------------------------------------------


def our_ends(kind: int, data: bytes, start: int = 0, end: int | None = None) -> list[int]:
    buf = np.frombuffer(data, dtype=np.uint8)
    end = len(data) if end is None else end
    return scan.piece_ends(kind, buf, start, end, STAGE1, STAGE2).tolist()


def split_at(data: bytes, start: int, ends: list[int]) -> list[bytes]:
    out, p = [], start
    for e in ends:
        out.append(data[p:e])
        p = e
    return out


def our_pieces(kind: int, text: str) -> list[str]:
    data = text.encode("utf-8")
    return [p.decode("utf-8") for p in split_at(data, 0, our_ends(kind, data))]


def our_pieces_stepwise(kind: int, text: str) -> list[str]:
    """The public per-piece entry points, called from Python (next_piece_<kind> and next_piece)."""
    data = text.encode("utf-8")
    buf = np.frombuffer(data, dtype=np.uint8)
    out, pos = [], 0
    while pos < len(data):
        e = NEXT[kind](buf, pos, len(data), STAGE1, STAGE2)
        assert e == scan.next_piece(kind, buf, pos, len(data), STAGE1, STAGE2)
        assert pos < e <= len(data)
        out.append(data[pos:e].decode("utf-8"))
        pos = e
    return out


# ------------------------------------------------------------------------------------------------
# oracles
# ------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def pat_str(kind: int) -> str:
    return tiktoken_params(ENCODING[kind])["pat_str"]


def ref_regex(kind: int, pattern: str | None = None):
    return split_regex(pat_str(kind) if pattern is None else pattern)


def ref_pieces(kind: int, text: str) -> list[str]:
    return ref_regex(kind).findall(text)


def tiktoken_pieces(kind: int, text: str) -> list[str]:
    """tiktoken's own piece boundaries (oracle 2 of the module docstring); short texts only."""
    import tiktoken

    data = text.encode("utf-8")
    assert len(data) <= 200, "the all-substrings vocabulary is quadratic"
    ranks = {bytes([b]): b for b in range(256)}
    for i in range(len(data)):
        for j in range(i + 2, len(data) + 1):
            ranks.setdefault(data[i:j], len(ranks))
    enc = tiktoken.Encoding(f"probe-{kind}", pat_str=pat_str(kind), mergeable_ranks=ranks, special_tokens={})
    return [enc.decode_single_token_bytes(t).decode("utf-8") for t in enc.encode_ordinary(text)]


def real_encoding(kind: int):
    return get_tiktoken_oracle(ENCODING[kind])


def assert_real_parity(kind: int, text: str, enc) -> None:
    single = getattr(enc, "encode_single_piece", None) or enc._encode_single_piece
    ids = enc.encode_ordinary(text)
    ours = [t for p in our_pieces(kind, text) for t in single(p.encode("utf-8"))]
    assert ours == ids, (KIND_IDS[kind], text[:200])


# ------------------------------------------------------------------------------------------------
# Unicode versions: our table (16.0) vs the regex module's
# ------------------------------------------------------------------------------------------------


def _regex_module_classes() -> np.ndarray:
    """Class code of every code point according to the `regex` module (same coding as ours)."""
    allc = "".join(map(chr, range(0x110000)))
    cls = np.zeros(0x110000, dtype=np.uint8)
    for code, prop in [(CLS_LU, r"\p{Lu}"), (CLS_LL, r"\p{Ll}"), (CLS_LT, r"\p{Lt}"), (CLS_LM, r"\p{Lm}"),
                       (CLS_LO, r"\p{Lo}"), (CLS_MARK, r"\p{M}"), (CLS_NUMBER, r"\p{N}"), (CLS_SPACE, r"\s")]:
        idx = [m.start() for m in regex.finditer(prop, allc)]
        assert not cls[idx].any(), prop
        cls[idx] = code
    return cls


def _our_classes() -> np.ndarray:
    cps = np.arange(0x110000)
    return STAGE2[(STAGE1[cps >> 8].astype(np.int64) << 8) | (cps & 0xFF)]


DISAGREE = frozenset(np.nonzero(_regex_module_classes() != _our_classes())[0].tolist())


def agrees(text: str) -> bool:
    return not any(ord(ch) in DISAGREE for ch in text)


def test_unicode_tables_differ_only_by_version():
    # A sanity check on the premise: the regex module follows a newer Unicode (17 with regex 2026.5,
    # more with later releases), so the two differ in code points unassigned in 16 (OTHER in our
    # table) plus one re-categorisation (U+0295 Ll -> Lo). White_Space agrees exactly.
    ours = _our_classes()
    assert sorted(c for c in DISAGREE if ours[c] != CLS_OTHER) in ([], [0x0295])
    try:
        import unicodedata2
    except ImportError:
        unicodedata2 = None
    if unicodedata2 is not None and unicodedata2.unidata_version == "16.0.0":
        assert {c for c in DISAGREE if unicodedata2.category(chr(c)) != "Cn"} <= {0x0295}
    space = np.nonzero(_our_classes() == CLS_SPACE)[0].tolist()
    assert space == sorted(map(ord, WHITE_SPACE))
    assert not (set(space) & DISAGREE)


# ------------------------------------------------------------------------------------------------
# material
# ------------------------------------------------------------------------------------------------

WHITE_SPACE = ([chr(c) for c in range(0x09, 0x0E)] + ["\x20", "\x85", "\xa0", "\u1680"]
               + [chr(c) for c in range(0x2000, 0x200B)] + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"])
CHARS_ALL = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    + list("sdmtlvreSDMTLVRE")  # the contraction letters, more often
    + list("0123456789") + ["'"] * 6 + [" "] * 8 + ["\t", "\r", "\n"] * 3 + WHITE_SPACE
    + list(".,!?;:-()[]{}\"#$%&*+<=>@\\^_`|~") + ["/"] * 3
    + ["\u0300", "\u0301", "\u0903", "\u20dd"]  # Mn Mn Mc Me
    + ["क", "ि", "्", "ก", "ั"]  # Devanagari Lo Mc Mn, Thai Lo Mn
    + ["ǅ", "ᾈ", "ʰ", "ー", "中", "文", "א", "É", "Σ", "é", "σ", "ß", "ſ", "\u212a", "İ"]  # Lt Lt Lm Lm Lo.. Lu Ll
    + ["٣", "४", "Ⅻ", "½", "²"]  # Nd Nd Nl No No
    + ["😀", "👍", "\U0001f3fd", "\u200d", "\ufe0f", "🇺", "🇸"]  # emoji, skin tone, ZWJ, VS16, regional
    + ["\x1c", "\u200b", "\ufeff", "\u180e"]  # isspace() or "space-like" but not White_Space
    + ["ʕ"]  # Ll in Unicode 16, Lo in 17: only for the tiktoken oracles
)
FRAGMENTS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL", "'D", "'M", "'ſ",
             "\r\n", "  ", " \n ", "//", "123", "1234", "A\u0301", "\u0301A", "ABC", "Abc", "aBC", "😀\u200d👍"]
CHARS_AGREE = [c for c in CHARS_ALL if agrees(c)]
FRAGMENTS_AGREE = [f for f in FRAGMENTS if agrees(f)]


def texts(chars, fragments, max_size=30):
    return st.lists(st.one_of(st.sampled_from(chars), st.sampled_from(fragments)), max_size=max_size).map("".join)


# (kind, text, expected pieces): one or more per branch; each is also checked against both oracles.
G, C, O = scan.PAT_GPT2, scan.PAT_CL100K, scan.PAT_O200K
HAND = [
    (G, "Hello world", ["Hello", " world"]),
    (G, "don't we'll I've they're I'm he'd", ["don", "'t", " we", "'ll", " I", "'ve", " they", "'re", " I", "'m",
                                              " he", "'d"]),
    (G, "DON'T 'Ll 'ſ", ["DON", "'", "T", " '", "Ll", " '", "ſ"]),  # case-sensitive
    (G, "x'sa''", ["x", "'s", "a", "''"]),
    (G, "a  b", ["a", " ", " b"]),  # \s+(?!\S) gives back the last space
    (G, "a \t\nb", ["a", " \t", "\n", "b"]),
    (G, "a\nb", ["a", "\n", "b"]),  # lone \s
    (G, "a   ", ["a", "   "]),  # \s++$
    (G, "  ", ["  "]),
    (G, "12345 678", ["12345", " 678"]),
    (G, "!!! ?\u0301", ["!!!", " ?\u0301"]),  # marks are [^\s\p{L}\p{N}] here
    (G, "\u0301a ١٢x", ["\u0301", "a", " ١٢", "x"]),
    (G, " \u3000x", [" ", "\u3000", "x"]),
    (C, "Hello world", ["Hello", " world"]),
    (C, "DON'T 'Ll", ["DON", "'T", " '", "Ll"]),
    (C, "'ſa 'Sb", ["'ſ", "a", " '", "Sb"]),  # U+017F folds to s: tiktoken counts it
    (C, "'llama", ["'ll", "ama"]),
    (C, "1234567", ["123", "456", "7"]),
    (C, "\tword .word \u0301a", ["\tword", " .", "word", " \u0301", "a"]),
    (C, "\nword", ["\n", "word"]),
    (C, "a...\n\nb", ["a", "...\n\n", "b"]),
    (C, " ...\r\n", [" ...\r\n"]),
    (C, "x \n \n  y", ["x", " \n \n", " ", " y"]),  # \s*[\r\n] ends at the LAST newline
    (C, "x  \n  ", ["x", "  \n  "]),  # \s++$ comes first
    (C, "x  y", ["x", " ", " y"]),
    (C, "x\u3000\u3000y", ["x", "\u3000", "\u3000y"]),  # a non-newline space is a letter prefix
    (C, "1a", ["1", "a"]),
    (C, "?", ["?"]),
    (O, "Hello World", ["Hello", " World"]),
    (O, "HELLOWorld HELLO world", ["HELLOWorld", " HELLO", " world"]),
    (O, "don't DON'T x'ſ ab'Ll", ["don't", " DON'T", " x'ſ", " ab'Ll"]),
    (O, "'sa 'S", ["'sa", " '", "S"]),
    (O, "ʰAB", ["ʰ", "AB"]),  # U* backtracks to the last Lm/Lo/M
    (O, "AʰBc", ["AʰBc"]),
    (O, "\u0301AB c", ["\u0301", "AB", " c"]),  # mark prefix, alternative 1 retried with the mark as word
    (O, " \u0301AB", [" \u0301", "AB"]),
    (O, "\u0301's", ["\u0301's"]),
    (O, "ǅa aǅ", ["ǅa", " a", "ǅ"]),
    (O, "1234567", ["123", "456", "7"]),
    (O, "a/b", ["a", "/b"]),
    (O, "x //\n\n/y", ["x", " //\n\n/", "y"]),
    (O, "  \n  ", ["  \n", "  "]),  # no \s++$ in o200k
    (O, "x \n \n  y", ["x", " \n \n", " ", " y"]),
    (O, "\n\n\nx", ["\n\n\n", "x"]),
    (O, "a\u3000\u3000b", ["a", "\u3000", "\u3000b"]),
    (O, "中文'S", ["中文'S"]),
]
HAND_IDS = [f"{KIND_IDS[k]}:{t!r}" for k, t, _ in HAND]


# ------------------------------------------------------------------------------------------------
# hand-written cases
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind,text,expected", HAND, ids=HAND_IDS)
def test_hand_cases(kind, text, expected):
    assert "".join(expected) == text
    assert our_pieces(kind, text) == expected
    assert our_pieces_stepwise(kind, text) == expected
    assert tiktoken_pieces(kind, text) == expected
    if agrees(text):
        assert ref_pieces(kind, text) == expected


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_hand_cases_real_ranks(kind):
    enc = real_encoding(kind)
    for k, text, _ in HAND:
        assert_real_parity(kind, text, enc)


def test_long_s_and_case_folding():
    """`'ſ` is a contraction for the (?i) patterns in tiktoken; K-like folds do not apply to these
    letters (only U+017F folds onto one of d/l/m/r/s/t/v/e)."""
    allc = "".join(map(chr, range(0x80, 0x110000)))
    assert [0x80 + m.start() for m in regex.finditer(r"(?i)[dlmrstve]", allc)] == [0x017F]
    for kind, text, want in [(C, "'ſa", ["'ſ", "a"]), (O, "a'ſb", ["a'ſ", "b"]), (G, "'ſa", ["'", "ſa"]),
                             (C, "'\u212a", ["'\u212a"]), (O, "a'\u212a", ["a", "'\u212a"]),
                             # ſ is C5 BF: neither byte alone makes a contraction (Ł is C5 81, ¿ is C2 BF)
                             (C, "'Łb", ["'Łb"]), (O, "a'Łb", ["a", "'Łb"]), (C, "'¿a", ["'¿", "a"]),
                             (O, "a'¿", ["a", "'¿"])]:
        assert tiktoken_pieces(kind, text) == want
        assert our_pieces(kind, text) == want


def test_unicode_16_not_17():
    """U+0295 (ʕ) is Ll in Unicode 16 (tiktoken 0.14) and Lo in 17 (the regex module here)."""
    assert tiktoken_pieces(O, "ʕAb") == ["ʕ", "Ab"]
    assert our_pieces(O, "ʕAb") == ["ʕ", "Ab"]


def test_segment_bounds_and_dollar():
    """Scanning [start, end) of a larger buffer: `$` is `end`, nothing past `end` is looked at."""
    data = "zz ab  \ncd".encode()
    start, end = 3, 8  # "ab  \n"
    for kind in KINDS:
        got = split_at(data, start, our_ends(kind, data, start, end))
        want = [p.encode() for p in ref_pieces(kind, data[start:end].decode())]
        assert got == want
    assert split_at(data, 3, our_ends(C, data, 3, 7)) == [b"ab", b"  "]  # \s++$ at the segment end
    assert split_at(data, 3, our_ends(G, data, 3, 7)) == [b"ab", b"  "]
    assert split_at(data, 3, our_ends(O, data, 3, 7)) == [b"ab", b"  "]  # \s+(?!\S) at the end
    buf = np.frombuffer(data, dtype=np.uint8)
    assert scan.next_piece(99, buf, 0, len(data), STAGE1, STAGE2) == -1
    assert scan.count_pieces(99, buf, 0, len(data), STAGE1, STAGE2) == -1


# the bytes right after a cut that would extend the piece if they were read: contraction letters
# (2 and 3 byte forms), CR/LF and '/', digits, cased letters
PAST_END = ["a's", "a'S", "a'll", "a'VE", "a'ſ", "x!!/\n/", "x !\r\n", "12345", "ab  \ncd", "ABCd", "AʰBc", "ǅa a'm"]


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_segment_end_is_end_of_text(kind):
    """A segment [start, end) of a larger buffer scans like its text alone, for every cut: nothing
    at or past `end` is looked at, even when those bytes would continue the piece."""
    for text in PAST_END:
        data = text.encode()
        for j in (0, 1):
            start = len(text[:j].encode())
            for k in range(j + 1, len(text)):
                end = len(text[:k].encode())
                got = split_at(data, start, our_ends(kind, data, start, end))
                want = [p.encode() for p in ref_pieces(kind, data[start:end].decode())]
                assert got == want, (text, start, end)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40), st.sampled_from(KINDS))
def test_malformed_utf8_partitions_safely(data, kind):
    """Invalid UTF-8 is outside the contract, but the scan must still partition [0, n) in bounds."""
    ends = our_ends(kind, data)
    assert all(a < b for a, b in zip([0] + ends, ends))
    assert (ends[-1] if ends else 0) == len(data)
    if data:  # a truncated buffer end never makes the scanner read past it
        cut = np.frombuffer(data + b"\xe4\xb8", dtype=np.uint8)
        assert scan.piece_ends(kind, cut, 0, len(data), STAGE1, STAGE2).tolist() == ends


# ------------------------------------------------------------------------------------------------
# property tests
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(CHARS_AGREE, FRAGMENTS_AGREE))
def test_vs_regex_module(kind, text):
    assert our_pieces(kind, text) == ref_pieces(kind, text)


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(CHARS_ALL, FRAGMENTS, max_size=20))
def test_vs_tiktoken_pieces(kind, text):
    assert our_pieces(kind, text) == tiktoken_pieces(kind, text)


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(CHARS_ALL, FRAGMENTS, max_size=40))
def test_vs_tiktoken_real_ranks(kind, text):
    assert_real_parity(kind, text, real_encoding(kind))


# ------------------------------------------------------------------------------------------------
# the tests can fail: deliberately wrong variants are caught
# ------------------------------------------------------------------------------------------------

def _mutants():
    g, c, o = pat_str(G), pat_str(C), pat_str(O)
    out = [
        (G, g.replace(r"|\s+(?!\S)|\s", r"|\s+"), "no \\s+(?!\\S) give-back"),
        # (dropping `\s++$` from r50k is NOT a mutant: `\s+(?!\S)` takes a final run whole anyway)
        (G, g.replace(r" ?\p{L}++", r"\s?\p{L}++"), "any space as letter prefix"),
        (G, g.replace(r"'(?:[sdmt]|ll|ve|re)", r"'(?i:[sdmt]|ll|ve|re)"), "case-insensitive contractions"),
        (C, c.replace(r"'(?i:[sdmt]|ll|ve|re)", r"'(?:[sdmt]|ll|ve|re)"), "case-sensitive contractions"),
        (C, c.replace(r"\s*[\r\n]", r"\s*?[\r\n]"), "first instead of last newline"),
        (C, c.replace(r"\p{N}{1,3}+", r"\p{N}++"), "unbounded digit runs"),
        (C, c.replace(r"[^\r\n\p{L}\p{N}]?+", r"[^\s\p{L}\p{N}]?+"), "no space prefix"),
        (C, c.replace(r"|\s++$", ""), "no \\s++$"),
        (O, o.replace(r"[^\r\n\p{L}\p{N}]?[", r"[^\r\n\p{L}\p{N}]?+[").replace("]*[", "]*+["), "possessive o200k"),
        (O, o.replace("(?i:", "(?:"), "case-sensitive contractions"),
        (O, o.replace(r"[\r\n/]*", r"[\r\n]*"), "no '/' tail"),
        (O, o.replace(r"\s*[\r\n]+", r"\s*?[\r\n]+"), "first instead of last newline"),
        (O, o.replace(r"|\s+(?!\S)", ""), "no \\s+(?!\\S) give-back"),
    ]
    for kind, p, what in out:
        assert p != pat_str(kind), what
    return out


@pytest.mark.parametrize("kind,pattern,what", _mutants(), ids=[m[2] + f"-{KIND_IDS[m[0]]}" for m in _mutants()])
def test_wrong_variants_are_caught(kind, pattern, what):
    mutant = ref_regex(kind, pattern)
    texts_ = [t for _, t, _ in HAND]
    caught = [t for t in texts_ if mutant.findall(t) != our_pieces(kind, t)]
    assert caught, f"no hand case tells the scanner from the mutant ({what})"
    # ... and the same comparison the property tests make fails on it
    with pytest.raises(AssertionError):
        assert our_pieces(kind, caught[0]) == mutant.findall(caught[0])


# ------------------------------------------------------------------------------------------------
# the shared corpora, whole files
# ------------------------------------------------------------------------------------------------


def _corpus_groups() -> list[tuple[str, list[Path]]]:
    root = SHARED / "corpora"
    groups = [(p.name, [p]) for p in sorted(root.glob("*.txt"))]
    udhr = sorted((root / "udhr").glob("*.txt"))
    if udhr:
        groups.append(("udhr", udhr))
    return groups


CORPORA = _corpus_groups()
# without the corpora: one skipped parameter naming the folder (not pytest's anonymous empty-set skip)
CORPUS_NAMES = [n for n, _ in CORPORA] or [
    pytest.param("corpora", marks=pytest.mark.skip(reason=missing_reason(SHARED / "corpora")))]


@functools.lru_cache(maxsize=None)
def _corpus_text(name: str) -> str:
    paths = dict(CORPORA)[name]
    text = "\n".join(p.read_text(encoding="utf-8") for p in paths) if name == "udhr" else \
        paths[0].read_text(encoding="utf-8")
    if DISAGREE:  # characters whose class differs between Unicode 16 and the regex module's version
        text = "".join("\ufffd" if ord(ch) in DISAGREE else ch for ch in text)
    return text


def test_corpora_present():
    if not CORPORA:
        pytest.skip(missing_reason(SHARED / 'corpora'))
    assert any(n == "udhr" for n, _ in CORPORA)


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_corpus_vs_regex_module(name, kind):
    text = _corpus_text(name)
    data = text.encode("utf-8")
    ref = np.cumsum([len(m.encode("utf-8")) for m in ref_regex(kind).findall(text)]).tolist()
    assert our_ends(kind, data) == ref


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_corpus_vs_tiktoken_real_ranks(name, kind):
    """Parity with the real encoder on the first 64 KB of each corpus / 2 KB of each UDHR language."""
    if name == "udhr":
        sample = "".join(p.read_text(encoding="utf-8")[:2000] for p in dict(CORPORA)[name])
    else:
        sample = _corpus_text(name)[:65536]
    assert_real_parity(kind, sample, real_encoding(kind))


# ------------------------------------------------------------------------------------------------
# the ASCII fast paths (scan._o200k_ascii, scan._letters_ascii, scan._letters8)
# ------------------------------------------------------------------------------------------------

# ASCII letter runs of lengths around the eight-byte steps, and what may end or continue them: a
# non-ASCII letter/mark (the fast path must hand over), punctuation, spaces, digits, contractions
ASCII_RUNS = ["a" * 7, "b" * 8, "c" * 9, "d" * 15, "e" * 16, "f" * 17, "word", "Word", "WORD", "WORDs", "x" * 24,
              "z" * 9, "Z" * 10, "aAzZ" * 3, "puzzle", "Zebra"]
ASCII_ENDS = ["é", "É", "ʰ", "ǅ", "中", "\u0301", "ſ", "'s", "'S", "'ſ", "'ll", ".", ",", "(", "//", "!\n", "\r\n",
              "\n", "\r", " ", "  ", "\u00a0", "1", "12345", "_", "@", "[", "`", "{", "\x00", "\x1c", "\t",
              "¡", "«", "—", ".¡", "!—", " (\u0301", "..\u0301", "-\u20dd"]
SCAN_KINDS = KINDS + [scan.PAT_LLAMA3, scan.PAT_QWEN2, scan.PAT_TEKKEN]
SCAN_PATTERNS = {scan.PAT_LLAMA3: tltok_patterns.LLAMA3_PATTERN, scan.PAT_QWEN2: tltok_patterns.QWEN2_PATTERN,
                 scan.PAT_TEKKEN: tltok_patterns.TEKKEN_PATTERN}


def _ref_any(kind: int, text: str) -> list[str]:
    if kind in SCAN_PATTERNS:
        return ref_regex(kind, SCAN_PATTERNS[kind]).findall(text)
    return ref_pieces(kind, text)


@pytest.mark.parametrize("kind", SCAN_KINDS, ids=KIND_IDS + ["llama3", "qwen2", "tekken"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.one_of(st.sampled_from(ASCII_RUNS), st.sampled_from(ASCII_ENDS)), max_size=12),
       cut=st.integers(min_value=0, max_value=40))
def test_ascii_fast_paths_vs_regex_module(kind, parts, cut):
    """Long ASCII runs ended by every kind of neighbour, whole and cut short by a segment end that
    falls inside a run (the eight-byte loads see past it)."""
    text = "".join(parts)
    if not all(agrees(ch) for ch in set(text)):
        return
    data = text.encode()
    assert split_at(data, 0, our_ends(kind, data)) == [p.encode() for p in _ref_any(kind, text)]
    end = len(text[:len(text) - cut].encode()) if cut < len(text) else 0
    if end > 0:
        got = split_at(data, 0, our_ends(kind, data, 0, end))
        assert got == [p.encode() for p in _ref_any(kind, data[:end].decode())]
