"""str -> UTF-8 before encoding: the Latin-1 kernel (kernels/utf8.str_utf8) against str.encode, and the
fallbacks (wider strings, lone surrogates) that text_to_buf hands to CPython."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tltok_jit.encoding import _KERNEL_UTF8_MIN, text_to_buf, text_to_utf8
from tltok_jit.kernels.utf8 import str_utf8

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
