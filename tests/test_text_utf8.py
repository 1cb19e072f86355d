"""str -> UTF-8 before encoding: the Latin-1 kernel (kernels/utf8.str_utf8) and the rows kernel of every
kind of str (str_utf8_rows) against str.encode, and the fallbacks (wider strings, lone surrogates)
that text_to_buf and the batch path hand to CPython."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tltok_jit.engine.text import KERNEL_UTF8_MIN as _KERNEL_UTF8_MIN, below_u0300, text_to_buf, text_to_utf8
from tltok_jit.kernels.utf8 import str_kind, str_utf8, str_utf8_into, str_utf8_len, str_utf8_rows

latin1 = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0xFF), max_size=80)


@settings(max_examples=300, deadline=None)
@given(s=latin1)
def test_kernel_equals_str_encode_on_latin1(s):
    data, ok = str_utf8(s)
    assert ok
    assert data.dtype == np.uint8
    assert data.tobytes() == s.encode("utf-8")


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65])
@pytest.mark.parametrize("where", ["start", "end", "every9"])
def test_kernel_around_the_eight_byte_steps(n, where):
    s = list("a" * n)
    if n:
        if where == "start":
            s[0] = "\xe9"
        elif where == "end":
            s[-1] = "\xff"
        else:
            s[::9] = "\x80" * len(s[::9])
    s = "".join(s)
    data, ok = str_utf8(s)
    assert ok and data.tobytes() == s.encode("utf-8")


@pytest.mark.parametrize("s", ["\u0100", "日本", "a\U0001F600", "x\ud800y"])
def test_kernel_declines_wider_strings(s):
    data, ok = str_utf8(s)
    assert not ok and len(data) == 0


@pytest.mark.parametrize("tail", ["", "é", "\u0100", "日本語", "\U0001F600", "\ud800", "\udfff x"])
def test_text_to_buf_is_text_to_utf8_past_the_threshold(tail):
    body = ("Zoë's café, naïve façade. " * (_KERNEL_UTF8_MIN // 20))[:_KERNEL_UTF8_MIN]
    for s in (body + tail, tail + body, "plain ascii " * 2000 + tail, tail):
        assert text_to_buf(s).tobytes() == text_to_utf8(s)


def test_long_latin1_text_matches_tiktoken(ours, tiktoken_oracle):
    text = ("Le garçon a mangé la crème brûlée à l'hôtel; " * 2000) + "Übermäßig ¡Olé! ¿Qué? «ñ» ÿ\xa0\xad"
    assert len(text) >= _KERNEL_UTF8_MIN and not text.isascii() and max(map(ord, text)) < 256
    for name in ("r50k_base", "o200k_base"):
        enc, ref = ours(name), tiktoken_oracle(name)
        want = ref.encode_ordinary(text)
        assert enc.encode_ordinary(text) == want
        assert enc.encode(text) == want
        assert enc.encode_to_numpy(text).tolist() == want


def _rows_one_by_one(texts):
    encoded = [text_to_utf8(t) for t in texts]
    return b"".join(encoded), np.cumsum([0] + [len(b) for b in encoded])


@pytest.mark.parametrize("kind", ["ascii", "latin1", "latin1-short", "wide", "surrogate"])
def test_rows_of_a_batch(ours, kind):
    enc = ours("o200k_base")
    rng = np.random.default_rng(7)
    alphabet = {"ascii": "ab \n'.", "latin1": "ab é\xffü\n", "latin1-short": "aé", "wide": "aé日\U0001F600",
                "surrogate": "aé\ud800"}[kind]
    n_rows = 3 if kind == "latin1-short" else 400
    texts = ["".join(rng.choice(list(alphabet), int(rng.integers(0, 120)))) for _ in range(n_rows)]
    texts[1] = ""
    data, offsets = enc.engine.texts_to_rows(texts)
    want_data, want_offsets = _rows_one_by_one(texts)
    assert data.tobytes() == want_data
    assert offsets.tolist() == list(want_offsets)


rows_text = st.lists(st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=30), max_size=12)


@settings(max_examples=300, deadline=None)
@given(texts=rows_text)
def test_rows_kernel_equals_str_encode_of_each_row(texts):
    joined = "".join(texts)
    char_offsets = np.cumsum([0] + [len(t) for t in texts]).astype(np.int64)
    byte_offsets = np.empty_like(char_offsets)
    data, ok = str_utf8_rows(joined, char_offsets, byte_offsets)
    try:
        encoded = [t.encode("utf-8") for t in texts]
    except UnicodeEncodeError:  # a surrogate: tiktoken's rule is the caller's, row by row
        assert not ok
        return
    assert ok
    assert data.tobytes() == b"".join(encoded)
    assert byte_offsets.tolist() == np.cumsum([0] + [len(b) for b in encoded]).tolist()


@pytest.mark.parametrize("s, ok", [("\xe9", True), ("日本", True), ("a\U0001F600", True), ("a\U0010FFFF\u07ff", True),
                                   ("x\ud800y", False), ("日\udfff", False), ("\U0001F600\ud83d", False)])
def test_rows_kernel_takes_every_kind_but_surrogates(s, ok):
    offsets = np.array([0, len(s)], dtype=np.int64)
    data, got = str_utf8_rows(s, offsets, offsets.copy())
    assert got == ok
    if ok:
        assert data.tobytes() == s.encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(s=st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=40), data=st.data())
def test_parts_of_a_str(s, data):
    """str_utf8_len and str_utf8_into of any part s[lo:hi], every kind of str, against str.encode."""
    lo = data.draw(st.integers(0, len(s)))
    hi = data.draw(st.integers(lo, len(s)))
    part = s[lo:hi]
    assert str_kind(s) == (1 if max(s, default="\0") < "\u0100" else 2 if max(s) < "\U00010000" else 4)
    n = str_utf8_len(s, lo, hi)
    assert n == len(part.encode("utf-8", "surrogatepass"))  # (a lone surrogate: three bytes, as U+FFFD)
    out = np.full(n + 3, 0xAA, dtype=np.uint8)
    ok = str_utf8_into(s, lo, hi, out)
    try:
        want = part.encode("utf-8")
    except UnicodeEncodeError:
        assert not ok
        return
    assert ok and out[:n].tobytes() == want and out[n:].tolist() == [0xAA] * 3  # nothing past the part


def test_batch_checks_each_row_for_disallowed_specials(ours, tiktoken_oracle):
    enc, ref = ours("cl100k_base"), tiktoken_oracle("cl100k_base")
    split = ["plain", "ends with <|endof", "text|> starts the next row"]  # no row holds the token
    assert enc.encode_batch(split) == ref.encode_batch(split)
    with pytest.raises(ValueError, match="<\\|fim_prefix\\|>"):
        enc.encode_batch(["é" * 20_000, "a <|fim_prefix|> b", "<|endoftext|>"])
    rows = (t for t in ["x", "y <|endoftext|>"])  # any iterable of str
    assert enc.encode_batch(rows, allowed_special="all") == ref.encode_batch(["x", "y <|endoftext|>"],
                                                                              allowed_special="all")
    assert enc.encode_ordinary_batch(iter(["é" * 20_000, "b"])) == ref.encode_ordinary_batch(["é" * 20_000, "b"])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.sampled_from([1, 7, 300]))
def test_batch_rows_with_added_tokens(ours, tiktoken_oracle, seed, n_rows):
    """Rows with added tokens go to the kernels in batches of entries (text between tokens, a token):
    rows of many tokens cross the batches' ends; every thread count gives tiktoken's ids."""
    enc, ref = ours("o200k_base"), tiktoken_oracle("o200k_base")
    rng = np.random.default_rng(seed)
    parts = ["<|endoftext|>", "<|endofprompt|>", "<|endof", "<", "|>", " hello", "é日", "  ", "\n", "12345", ""]
    texts = ["".join(rng.choice(parts, int(rng.integers(0, 12)))) for _ in range(n_rows)]
    want = ref.encode_batch(texts, allowed_special="all")
    for threads in (1, 2):
        assert enc.encode_batch(texts, allowed_special="all", num_threads=threads) == want
    only = {"<|endofprompt|>"}
    assert enc.encode_batch(texts, allowed_special=only, disallowed_special=()) == \
        ref.encode_batch(texts, allowed_special=only, disallowed_special=())


def test_buffers_are_read_only(ours):
    """One argument type for every call: a writable buffer would make numba compile (or load) a second
    variant of each kernel in the middle of a user's call."""
    enc = ours("o200k_base")
    for s in ("é" * _KERNEL_UTF8_MIN, "a" * _KERNEL_UTF8_MIN, "日本" * _KERNEL_UTF8_MIN, "short"):
        assert not text_to_buf(s).flags.writeable
        data, _ = enc.engine.texts_to_rows([s, s])
        assert not data.flags.writeable


def test_a_batch_item_that_is_not_a_str_is_named(ours):
    enc = ours("o200k_base")
    for rows, item in ((["a", "é" * 20_000, 3], "item 2"), (["a", b"bytes"], "item 1")):
        with pytest.raises(TypeError, match=item):
            enc.encode_ordinary_batch(rows)


@settings(max_examples=200, deadline=None)
@given(s=st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=300))
def test_ascii_view_is_the_str_s_own_characters(s):
    import platform

    from tltok_jit.engine import text

    if platform.python_implementation() == "CPython":
        assert text._ASCII_DATA is not None, "the layout check refused this CPython"
    v = text.ascii_view(s)
    assert v.dtype == np.uint8 and not v.flags.writeable and v.tobytes() == s.encode()

    class Sub(str):
        pass

    assert text.ascii_view(Sub(s)).tobytes() == s.encode()  # a copy for other types


def test_long_ascii_text_takes_the_long_text_entry(ours, tiktoken_oracle, monkeypatch):
    """A long ASCII text is read in place through the kernel entry of every other long text: a kernel
    of its own cost a first ASCII text after non-ASCII ones ~2.5 ms of loading from the cache."""
    from tltok_jit.kernels import handle

    def refuse(*args):
        raise AssertionError("encode_ascii_at called for a long text")

    monkeypatch.setattr(handle, "encode_ascii_at", refuse)
    text = "def f(x):\n    return x + 1  # plain ASCII\n" * 400
    assert text.isascii() and len(text) > 4096
    enc, ref = ours("o200k_base"), tiktoken_oracle("o200k_base")
    assert enc.encode_ordinary(text, num_threads=1) == ref.encode_ordinary(text)
    assert enc.encode(text, num_threads=1, allowed_special="all") == ref.encode(text, allowed_special="all")


def test_characters_below_u0300_are_nfc_starters():
    """below_u0300's reason: every character below U+0300 is NFC on its own and a starter
    (combining class 0), so a text of them passes the NFC quick check whatever their order."""
    import unicodedata

    for cp in range(0x300):
        assert unicodedata.is_normalized("NFC", chr(cp)) and unicodedata.combining(chr(cp)) == 0, hex(cp)


@pytest.mark.parametrize("text,want", [("", True), ("plain", True), ("caf\u00e9 \u02ff", True), ("e\u0301", False),
                                       ("\u0300", False), ("\u4e2d", False), ("\U0001f600", False)])
def test_below_u0300(text, want):
    data = text.encode("utf-8")
    assert below_u0300(data) is want
    assert below_u0300(np.frombuffer(data, dtype=np.uint8)) is want
