"""Streaming encode (`Encoding.stream_encoder`): every chunking gives `encode`'s ids; bounded delay.

The boundary argument is in `tltok_jit/streaming/encode.py`; these tests attack each step of it:
chunk boundaries everywhere (character by character, byte by byte, random), inside whitespace runs,
between a word and its contraction, inside `\\r\\n` and multi-byte characters, around special
tokens; long runs of every piece type (so the incremental BPE and its resume anchors run, with the
fast and the merging pair check); the delay and memory bounds; the CLI through a pipe.
"""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ENCODINGS = ["r50k_base", "cl100k_base", "o200k_base"]
REPO = Path(__file__).resolve().parent.parent

# Characters chosen for the scanners' decisions: letters of every case class (Lu, Ll, Lt, Lm, Lo),
# marks, contraction letters and the long s (folds to s), apostrophes, digits (ASCII and not),
# whitespace of every kind (CR, LF, tab, NBSP, ideographic space), '/', punctuation, CJK, emoji,
# BOM, NUL, and pieces of special tokens.
ATOMS = ["a", "b", "s", "t", "l", "e", "d", "m", "r", "v", "A", "B", "Z", "ǅ", "ʰ", "ª", "é", "e\u0301",
         "\u0301", "'", "'s", "'t", "'ll", "'S", "'ſ", "ſ", "'re", "'ve", "'M", " ", "  ", "\t", "\n", "\r",
         "\r\n", "\n\n", " \n", "\u00a0", "\u3000", "0", "1", "9", "٣", "²", "!", ".", "/", "//", "-", "—",
         "中", "文", "。", "，", "😀", "👍🏽", "\ufeff", "\x00", "x", "Hello", " world", "don't", "ABC",
         "<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<|", "<|end", "|>", "<", "|", "endoftext"]
RUNS = ["a", "z", "ab", "A", "AB", "中", " ", "\n", " \n", "\t", "!", "=", "1", "é", "ª", "aB", "'", "/",
        "😀", "xy ", "ªA", "a\u0301", "!'", "-/", "\r\n", "  \n"]
POLICIES = [
    (set(), ()),  # specials are plain text
    ("all", ()),  # specials are ids
    (set(), "all"),  # tiktoken's default: a special token is an error
    ({"<|endoftext|>"}, "all"),
]


def _encode_or_error(enc, text, allowed, disallowed):
    try:
        return enc.encode(text, allowed_special=allowed, disallowed_special=disallowed)
    except ValueError:
        return None


def _stream(enc, pieces, allowed, disallowed, *, as_bytes=False, long_min=None):
    from tltok_jit.streaming.encode import StreamEncoder

    kw = {} if long_min is None else {"long_min": long_min}
    se = StreamEncoder(enc, allowed_special=allowed, disallowed_special=disallowed, **kw)
    out = []
    try:
        for p in pieces:
            got = se.feed_bytes(p) if as_bytes else se.feed(p)
            assert got.dtype == np.uint32
            out.append(got)
        out.append(se.finish())
    except ValueError:
        return None
    return np.concatenate(out).tolist()


def _cut(seq, sizes):
    out, i, k = [], 0, 0
    while i < len(seq):
        n = sizes[k % len(sizes)] if sizes else len(seq)
        out.append(seq[i:i + n])
        i += n
        k += 1
    return out


@pytest.fixture(scope="module", params=ENCODINGS)
def enc(request, ours):
    return ours(request.param)


# ------------------------------------------------------------------------------------ exactness


text_st = st.lists(
    st.one_of(st.sampled_from(ATOMS), st.tuples(st.sampled_from(RUNS), st.integers(1, 300)).map(lambda t: t[0] * t[1])),
    min_size=0, max_size=30).map("".join)
sizes_st = st.lists(st.integers(1, 40), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=text_st, sizes=sizes_st, policy=st.sampled_from(POLICIES), as_bytes=st.booleans(),
       long_min=st.sampled_from([1, None]))
def test_random_chunkings(enc, text, sizes, policy, as_bytes, long_min):
    allowed, disallowed = policy
    want = _encode_or_error(enc, text, allowed, disallowed)
    seq = text.encode("utf-8") if as_bytes else text
    got = _stream(enc, _cut(seq, sizes), allowed, disallowed, as_bytes=as_bytes, long_min=long_min)
    assert got == want


ADVERSARIAL = [
    "Hello world, don't stop! It's 12345 o'clock.\r\n\r\n  indented\n\tTab",
    "a  b   c    \n    d\n\n\n   \n  x",  # whitespace runs: \s+(?!\S) gives the last space away
    "word   \r\n   \n   word",  # \s*[\r\n]: ends after the LAST CR/LF of the run
    "don't DON'T we'll WE'LL I'm you've they're she'd 'ſ x'ſ",  # contractions, cut anywhere
    "ABCªDEF ABCªDEFg ABCDEFghi ǅungla ʰabc AªBªC",  # o200k [U]*[W]+ backtracking
    "é e\u0301 \u0301\u0301x a\u0301b 中文。中文，字 😀😀👍🏽!!",  # multi-byte, marks
    "12345678 1,234.5 ٣٣٣٣ ²³ x1y2",  # digit runs ({1,3})
    "a/b//c\n//d!/\r\n/ ' '' ''' 'x",  # o200k [\r\n/]* tail, apostrophe runs
    "<|endoftext|><|endoftext|>a<|endofprompt|> <|end <|endoftext <|fim_prefix|>|>",
    "\u00a0\u3000 \u00a0x\u3000\n\u00a0",
    "\ufeffBOM\x00NUL\x00 \x00\n",
]


@pytest.mark.parametrize("policy", POLICIES)
def test_adversarial_every_cut(enc, policy):
    """Every two-way cut, character by character, and byte by byte."""
    allowed, disallowed = policy
    for text in ADVERSARIAL:
        want = _encode_or_error(enc, text, allowed, disallowed)
        assert _stream(enc, list(text), allowed, disallowed) == want, text
        data = text.encode("utf-8")
        assert _stream(enc, [data[i:i + 1] for i in range(len(data))], allowed, disallowed,
                       as_bytes=True) == want, text
        for i in range(len(text) + 1):
            assert _stream(enc, [text[:i], text[i:]], allowed, disallowed) == want, (text, i)
        for i in range(len(data) + 1):
            assert _stream(enc, [data[:i], data[i:]], allowed, disallowed, as_bytes=True) == want, (text, i)


SMALL_ALPHABET = ["a", "s", "A", "ª", "\u0301", "'", " ", "\n", "\r", "1", "!", "/", "中", "\t", "é"]


def test_random_short_strings_char_by_char(enc):
    """Many short strings fed one character at a time: each prefix decision meets a real future."""
    rng = random.Random(1234)
    for _ in range(1500):
        text = "".join(rng.choice(SMALL_ALPHABET) for _ in range(rng.randint(1, 14)))
        want = enc.encode(text, disallowed_special=())
        assert _stream(enc, list(text), set(), ()) == want, repr(text)


@pytest.mark.slow
def test_exhaustive_length4(enc):
    for n in range(1, 5):
        for tup in itertools.product(SMALL_ALPHABET, repeat=n):
            text = "".join(tup) + " z"
            assert _stream(enc, list(text), set(), ()) == enc.encode(text, disallowed_special=()), repr(text)


LONG_CASES = {
    "lower": ("abcdefghijklmnopqrstuvwxyz", 400),
    "mixed": ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 400),
    "upper": ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 400),
    "upper_then_lower": ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 400),
    "cjk": ("中文字的是不了人我在有他这为之大", 200),
    "lo_upper": ("ªABC", 300),
    "digits": ("0123456789", 400),
    "punct": ("!#$%&()*+,-.:;<=>?@[]^_`{|}~", 400),
    "punct_apos": ("!'s", 300),
    "slash_tail": ("!/", 300),
    "emoji": ("😀👍🏽🎉", 100),
    "spaces": (" \t", 400),
    "newlines": ("\n\r", 400),
    "ws_mixed": (" \n\t", 400),
    "devanagari": ("कखगघङचछजझञ\u094d\u093f\u0940", 200),
    "marks": ("a\u0301\u0302", 300),
}
TAILS = ["", " end", "'s", "'ll more", "x", "X", "\n", "\n\nz", "!", "/x", "1", " ", "  ", "中", "<|endoftext|>"]


@pytest.mark.parametrize("case", sorted(LONG_CASES))
@pytest.mark.parametrize("slow_pairs", [False, True], ids=["fast-pairs", "merged-pairs"])
def test_long_pieces(enc, case, slow_pairs, monkeypatch):
    """Long live pieces (incremental BPE + resume anchors) with every ending, random chunkings."""
    from tltok_jit.streaming import encode as SE

    assert SE.long_tables(enc).fast == 1  # r50k, cl100k, o200k: every token's merges come in rank order
    if slow_pairs:
        monkeypatch.setattr(SE, "_FORCE_SLOW_COMPAT", True)
    alphabet, n = LONG_CASES[case]
    rng = random.Random(hash(case) & 0xFFFF)
    for tail in TAILS:
        for head in ["", "x ", "'", " ", "\n", "-"]:
            body = "".join(rng.choice(alphabet) for _ in range(n))
            if case == "upper_then_lower":
                body += "abc"
            text = head + body + tail
            want = enc.encode(text, allowed_special="all")
            sizes = [rng.choice([1, 3, 7, 64, 200]) for _ in range(4)]
            assert _stream(enc, _cut(text, sizes), "all", (), long_min=1) == want, (case, head, tail)
            data = text.encode("utf-8")
            assert _stream(enc, _cut(data, sizes), "all", (), as_bytes=True, long_min=1) == want


@pytest.mark.parametrize("n", [120, 126, 127, 200])
@pytest.mark.parametrize("tail", ["'re" + "s", "'ſx", "'LL're", "'s'd"])
def test_long_word_then_contraction(enc, n, tail):
    # o200k attaches a contraction to the word before it: the resume anchor of a long word must
    # never be a letter of the suffix (a scan from there would read "res" as a new word)
    text = "a" * n + tail
    want = enc.encode_ordinary(text)
    for size in (1, 2, 5):
        assert _stream(enc, _cut(text, [size]), set(), "all", long_min=1) == want


def test_corpora_random_chunks(enc, shared_path):
    rng = random.Random(7)
    for rel in ["corpora/english-war-and-peace.txt", "corpora/chinese-sanguo-yanyi.txt", "corpora/emoji-test.txt"]:
        text = shared_path(rel).read_text(encoding="utf-8")
        start = rng.randrange(0, max(1, len(text) - 60000))
        text = text[start:start + 60000]
        sizes = [rng.choice([1, 2, 5, 17, 100, 1000, 4096]) for _ in range(16)]
        got = _stream(enc, _cut(text, sizes), set(), ())
        assert got == enc.encode(text, disallowed_special=()), rel
        data = text.encode("utf-8")
        got = _stream(enc, _cut(data, sizes), set(), (), as_bytes=True)
        assert got == enc.encode(text, disallowed_special=()), rel


# ------------------------------------------------------------------------------------ edge semantics


def test_disallowed_raises_when_completed(enc):
    text = "hello world " * 20 + "<|endoftext|> after"
    se = enc.stream_encoder()
    before = []
    cut = text.index("<|endoftext|>") + 5
    for ch in text[:cut]:
        before.append(se.feed(ch))
    with pytest.raises(ValueError, match="disallowed special token"):
        for ch in text[cut:]:
            se.feed(ch)
    emitted = np.concatenate(before).tolist()
    # nothing of the special token (nor after it) was emitted; what was is encode's prefix
    prefix = enc.encode(text[:text.index("<|endoftext|>")])
    assert emitted == prefix[:len(emitted)]
    # the encoder was reset: a new text works
    assert np.concatenate([se.feed("abc"), se.finish()]).tolist() == enc.encode("abc")


def test_disallowed_in_finish_and_bytes(enc):
    se = enc.stream_encoder()
    se.feed_bytes(b"x <|endoftext")
    with pytest.raises(ValueError):
        se.feed_bytes(b"|>")
    se = enc.stream_encoder(allowed_special={"<|endoftext|>"})
    assert np.concatenate([se.feed("a<|endoftext|>b"), se.finish()]).tolist() == \
        enc.encode("a<|endoftext|>b", allowed_special={"<|endoftext|>"})


def test_disallowed_plain_string(enc):
    """tiktoken refuses any listed string, special token or not."""
    text = "one two three forbidden four"
    with pytest.raises(ValueError):
        enc.encode(text, disallowed_special={"forbidden"})
    se = enc.stream_encoder(disallowed_special={"forbidden"})
    with pytest.raises(ValueError):
        for ch in text:
            se.feed(ch)


def test_utf8_split_and_invalid(enc):
    text = "naïve 😀 中文 e\u0301"
    data = text.encode("utf-8")
    for i in range(len(data) + 1):
        se = enc.stream_encoder()
        got = np.concatenate([se.feed_bytes(data[:i]), se.feed_bytes(data[i:]), se.finish()]).tolist()
        assert got == enc.encode(text), i
    bad = b"ab\xff\xfecd\xe4\xb8 x\xf0\x9f\x98"  # invalid bytes, a truncated character, one at the end
    se = enc.stream_encoder()
    got = np.concatenate([se.feed_bytes(bad[:3]), se.feed_bytes(bad[3:9]), se.feed_bytes(bad[9:]),
                          se.finish()]).tolist()
    assert got == enc.encode(bad.decode("utf-8", "replace"))
    from tltok_jit.streaming.encode import StreamEncoder

    se = StreamEncoder(enc, errors="strict")
    with pytest.raises(UnicodeDecodeError):
        se.feed_bytes(b"ab\xff")


def test_surrogates(enc):
    text = "a\ud83d\ude00b\ud800c\udc00"  # a pair (combines, like encode), lone ones (U+FFFD)
    want = enc.encode(text)
    for i in range(len(text) + 1):
        se = enc.stream_encoder()
        assert np.concatenate([se.feed(text[:i]), se.feed(text[i:]), se.finish()]).tolist() == want, i
    se = enc.stream_encoder()
    assert np.concatenate([se.feed("x\ud83d"), se.finish()]).tolist() == enc.encode("x\ud83d")


def test_reuse_after_finish(enc):
    se = enc.stream_encoder()
    for text in ["first text ", "second\n", ""]:
        assert np.concatenate([se.feed(text), se.finish()]).tolist() == enc.encode(text)


def test_empty(enc):
    se = enc.stream_encoder()
    assert se.feed("").tolist() == []
    assert se.feed_bytes(b"").tolist() == []
    assert se.finish().tolist() == []


# ------------------------------------------------------------------------------------ delay and memory


def test_pieces_settle_promptly(enc):
    """A word's ids come out once a few bytes of the next word arrived (no waiting for the end)."""
    se = enc.stream_encoder()
    out = []
    for w in ["The ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog"]:
        out.append(se.feed(w))
        assert se.buffered_bytes <= 16, (w, se.buffered_bytes)
    assert sum(len(o) for o in out[:-1]) >= 5
    assert np.concatenate(out + [se.finish()]).tolist() == enc.encode("The quick brown fox jumps over the lazy dog")


def test_special_held_at_most_its_length(enc):
    se = enc.stream_encoder(allowed_special="all")
    prefix = "some words here "
    se.feed(prefix)
    special = "<|endoftext|>"
    for k in range(1, len(special)):
        se.feed(special[k - 1])
        # held: the special token's prefix, plus at most the last piece before it and the margin
        assert se.buffered_bytes <= k + len(" here ") + 4, (k, se.buffered_bytes)
    got = se.feed(special[-1])
    assert enc.eot_token in got.tolist()


def _random_letters(n, seed=0, alphabet="abcdefghijklmnopqrstuvwxyz"):
    rng = np.random.default_rng(seed)
    return "".join(np.array(list(alphabet))[rng.integers(0, len(alphabet), n)])


@pytest.mark.parametrize("name", ENCODINGS)
def test_bounded_delay_one_megabyte_word(ours, name):
    """1 MB of random letters (one piece) in 1 KB chunks: ids come out all along, and the held text
    stays below 2 * the longest token (measured: maxlen + 4..8) whatever the input length."""
    enc = ours(name)
    text = _random_letters(1 << 20, seed=5)
    se = enc.stream_encoder()
    max_len = int(np.diff(enc.engine.tables.tok_offsets).max())
    parts, max_held, first_at = [], 0, None
    for i in range(0, len(text), 1024):
        got = se.feed(text[i:i + 1024])
        parts.append(got)
        if first_at is None and len(got):
            first_at = i
        max_held = max(max_held, se.buffered_bytes)
    parts.append(se.finish())
    assert first_at is not None and first_at <= 4096
    assert max_held <= 2 * max_len, max_held
    assert sum(len(p) for p in parts[:-1]) > 0.99 * sum(len(p) for p in parts)
    assert np.array_equal(np.concatenate(parts), enc.encode_to_numpy(text))


@pytest.mark.parametrize("alphabet", [" \t", "!#%&*+-=", "😀🎉", "中文字的是不了人我在有", "0123456789"],
                         ids=["ws", "punct", "emoji", "cjk", "digits"])
def test_bounded_delay_other_runs(enc, alphabet):
    text = "x " + _random_letters(200_000, seed=3, alphabet=alphabet) + " end"
    se = enc.stream_encoder()
    max_len = int(np.diff(enc.engine.tables.tok_offsets).max())
    parts, max_held = [], 0
    for i in range(0, len(text), 1000):
        parts.append(se.feed(text[i:i + 1000]))
        max_held = max(max_held, se.buffered_bytes)
    parts.append(se.finish())
    assert max_held <= 2 * max_len, max_held
    assert np.array_equal(np.concatenate(parts), enc.encode_to_numpy(text))


def test_inherent_unbounded_case_is_exact(ours):
    """cl100k/o200k `\\s*[\\r\\n]`: after a CR/LF, a whitespace run's split waits for the run's end
    (the ids differ with and without a later CR/LF); exactness is kept, the run is held."""
    for name in ["cl100k_base", "o200k_base"]:
        enc = ours(name)
        for tail in ["x", "\nx", ""]:
            text = "a\n" + " " * 5000 + tail
            parts = [enc.stream_encoder()]
            se = parts.pop()
            got = [se.feed(text[i:i + 100]) for i in range(0, len(text), 100)] + [se.finish()]
            assert np.concatenate(got).tolist() == enc.encode(text)


def test_per_feed_work_is_incremental(ours):
    """Feeding 1 byte at a time costs about as much per byte as big chunks (no rescans of the
    buffer): time per byte of 1-byte feeds of a long word vs of normal text stays bounded."""
    enc = ours("o200k_base")
    word = _random_letters(20000, seed=9)
    se = enc.stream_encoder()
    se.feed(word[:2000])
    t = time.perf_counter()
    for ch in word[2000:]:
        se.feed(ch)
    per_byte_long = (time.perf_counter() - t) / 18000
    se.finish()
    assert se.buffered_bytes == 0
    text = ("lorem ipsum dolor sit amet " * 1000)[:18000]
    se = enc.stream_encoder()
    t = time.perf_counter()
    for ch in text:
        se.feed(ch)
    per_byte_text = (time.perf_counter() - t) / 18000
    assert per_byte_long < 10 * per_byte_text + 50e-6, (per_byte_long, per_byte_text)


# ------------------------------------------------------------------------------------ the CLI


def test_cli_streams_before_eof(ours, tmp_path):
    """`tltok stream` in a pipe: the first ids come out while stdin is still open."""
    enc = ours("o200k_base")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "tltok_jit.integrations.stream_cli", "--encoding", "o200k_base"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=str(REPO))
    first = "Hello streaming world, this is the first part of an endless input. "
    try:
        proc.stdin.write(first.encode())
        proc.stdin.flush()
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.time() + 600  # generous: the subprocess may compile the kernels
        line = b""
        while not line.endswith(b"\n"):
            if not sel.select(timeout=max(0.0, deadline - time.time())):
                raise AssertionError("no id before stdin was closed: " + proc.stderr.read1(4096).decode())
            line += os.read(proc.stdout.fileno(), 1)
        assert proc.poll() is None  # still running: stdin is open
        first_id = int(line)
        second = "And the rest arrives later.\n"
        proc.stdin.write(second.encode())
        proc.stdin.close()
        rest = proc.stdout.read()
        assert proc.wait(timeout=600) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    ids = [first_id] + [int(x) for x in rest.split()]
    assert ids == enc.encode(first + second)


def test_cli_u32_and_specials(ours):
    enc = ours("cl100k_base")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    text = "a<|endoftext|>b\n"
    r = subprocess.run([sys.executable, "-m", "tltok_jit.integrations.stream_cli", "-e", "cl100k_base", "--format", "u32",
                        "--allowed-special", "all"], input=text.encode(), capture_output=True, env=env,
                       cwd=str(REPO), timeout=600)
    assert r.returncode == 0, r.stderr
    assert np.frombuffer(r.stdout, dtype="<u4").tolist() == enc.encode(text, allowed_special="all")
    r = subprocess.run([sys.executable, "-m", "tltok_jit.integrations.stream_cli", "-e", "cl100k_base",
                        "--disallowed-special", "all"], input=text.encode(), capture_output=True, env=env,
                       cwd=str(REPO), timeout=600)
    assert r.returncode == 2 and b"disallowed special token '<|endoftext|>'" in r.stderr


# ------------------------------------------------------------------------------------ internals


def test_fast_pair_check_matches_merging(enc):
    """`_compat_fast` (no merging) == Merge(bytes(a) + bytes(b)) == [a, b], on random pairs of
    reachable tokens, short ones (dense interactions) and the adjacent pairs of real encodings."""
    from numba import njit

    from tltok_jit.streaming import encode as SE
    from tltok_jit.kernels import stream_encode as K
    from tltok_jit.kernels.trees import merges_to_pair

    @njit
    def disagreements(T, LT, A, B):
        syms = np.empty(2 * LT.max_len + 8, np.uint32)
        vals = np.empty(2 * LT.max_len + 8, np.int64)
        bad = 0
        compatible = 0
        for k in range(len(A)):
            a = A[k]
            b = B[k]
            slow = merges_to_pair(a, b, T.tok_bytes, T.tok_offsets, T.byte_ids, T.pair_slots, T.rank_ids, syms, vals)
            fast = K._compat_fast(a, b, T.pair_slots, T.rank_ids, LT.crank, LT.split_l, LT.split_r, T.pair_bloom)
            compatible += slow
            bad += slow != fast
        return bad, compatible

    LT = SE.long_tables(enc)
    assert LT.fast == 1
    ids = np.flatnonzero(LT.reach).astype(np.int64)
    lens = np.diff(enc.engine.tables.tok_offsets)[ids]
    rng = np.random.default_rng(11)
    for pool in (ids, ids[lens <= 2], ids[lens <= 4]):
        A, B = rng.choice(pool, 200_000), rng.choice(pool, 200_000)
        bad, comp = disagreements(enc.engine.tables, LT, A, B)
        assert bad == 0 and 0 < comp < len(A)
    text = "It's a truth universally acknowledged. 中文字符 😀 naïve ÆØÅ don't 12345 \n\n  def f(x):\n"
    e = np.asarray(enc.encode_ordinary(text * 50), dtype=np.int64)
    bad, comp = disagreements(enc.engine.tables, LT, e[:-1], e[1:])  # pairs across pieces need not be compatible
    assert bad == 0 and comp > 0.5 * len(e)


def test_unsupported_pattern_kind_refused(enc):
    import types

    from tltok_jit.streaming.encode import StreamEncoder

    from tltok_jit.kernels.scan import PAT_WHOLE

    tables = enc.engine.tables._replace(config=np.array([PAT_WHOLE, 1, 1, 0], dtype=np.int64))
    fake = types.SimpleNamespace(engine=types.SimpleNamespace(tables=tables, name="x"))
    with pytest.raises(NotImplementedError, match="scanner kind"):
        StreamEncoder(fake)
