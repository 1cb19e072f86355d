"""Streaming encode on held text: the cost stays linear however long the held run, and the ids stay
exact for every chunking.

Held runs are the inputs whose ids cannot settle until the run ends (cl100k/o200k: a CR/LF then a
whitespace run without CR/LF; o200k: a [Lm Lo M] then a run of capitals), and long runs of every
other kind (spaces, letters, digits, punctuation, CJK, marks, newline and space mixes), which the
incremental BPE emits while they grow. `tltok_jit/streaming/encode.py` ("Held runs") has the argument;
here: (1) time for 2N held characters vs N (a re-scan or re-copy of the held text per call makes it
4x), (2) exactness against `encode` of the whole text for random chunkings (hypothesis), and (3)
the shortcut that skips a held run changes nothing: per call, the same ids as the encoder with the
shortcut turned off.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tltok_jit.kernels import stream_encode as K  # noqa: E402
from tltok_jit.streaming.encode import StreamEncoder  # noqa: E402

# (head, unit): the text is head + unit repeated to N characters + "y"
HELD = {
    "newline_then_spaces": ("x\n", " "),
    "punct_newline_then_spaces": ("x!\n", " "),
    "newline_then_tabs_and_wide_spaces": ("x\n", " \t\u3000"),
    "newlines_then_spaces": ("x" + "\n \n" * 200, " "),
    "modifier_then_capitals": ("x ʰ", "ABC"),
    "cjk_then_capitals": ("x " + "中" * 300, "ABC"),
    "spaces": ("x", " "),
    "letters": ("", "abcdefghij"),
    "digits": ("", "0123456789"),
    "punctuation": ("", "!?=-+*&^%$#@"),
    "cjk": ("", "中文字词语言"),
    "newline_space_mix": ("x", "\n \n  \n"),
    "marks_after_letter": ("a", "\u0301"),
    "marks_after_punctuation": ("!", "\u0301\u0300"),
}
LINEAR = {
    "o200k_base": list(HELD),
    "cl100k_base": ["newline_then_spaces", "punct_newline_then_spaces", "newlines_then_spaces", "spaces",
                    "marks_after_letter", "letters"],
    "r50k_base": ["newline_then_spaces", "spaces", "digits"],
}


def _text(case: str, n: int) -> tuple[str, str]:
    head, unit = HELD[case]
    return head, (unit * (n // len(unit) + 1))[:n]


def _feed_all(se, head: str, body: str, chunk: int = 64) -> list[np.ndarray]:
    out = [se.feed(head)]
    for i in range(0, len(body), chunk):
        out.append(se.feed(body[i:i + chunk]))
    out.append(se.feed("y"))
    out.append(se.finish())
    return out


def _once(enc, head: str, body: str) -> float:
    se = enc.stream_encoder()
    t = time.process_time()  # this process's CPU time: the other processes on the machine barely move it
    _feed_all(se, head, body)
    return time.process_time() - t


def _seconds(enc, case: str, n: int) -> tuple[float, float]:
    """Best of 5 CPU times for n and for 2n held characters, interleaved (other work on the machine
    only adds time, and affects both sizes alike)."""
    small, big = _text(case, n), _text(case, 2 * n)
    t1 = t2 = float("inf")
    for _ in range(5):
        t1 = min(t1, _once(enc, *small))
        t2 = min(t2, _once(enc, *big))
    return t1, t2


@pytest.fixture(scope="module")
def warm(ours):
    """The encodings with their incremental-BPE tables built (not part of any timing)."""
    def get(name):
        enc = ours(name)
        se = enc.stream_encoder()
        se.feed("a" * 3000)
        se.finish()
        return enc
    return get


@pytest.mark.parametrize("name,case", [(n, c) for n, cases in LINEAR.items() for c in cases])
def test_held_run_cost_is_linear(warm, name, case):
    """Feeding 2N held characters in 64-character chunks takes < 3x the time of N (quadratic: 4x);
    N = 40,000 (625 calls; the old encoder took 1.9 s for the first case at N = 40,000 on o200k, 4x
    its time at 20,000)."""
    enc = warm(name)
    t1, t2 = _seconds(enc, case, 40_000)
    assert t2 < 3 * t1, (case, t1, t2)


@pytest.mark.parametrize("case", sorted(HELD))
def test_held_runs_exact(warm, case):
    enc = warm("o200k_base")
    for n in (1, 5, 300, 5000):
        head, body = _text(case, n)
        got = np.concatenate(_feed_all(enc.stream_encoder(), head, body, chunk=37)).tolist()
        assert got == enc.encode(head + body + "y"), (case, n)


# ------------------------------------------------------------------------------------ hypothesis

# Heads that start a held run, units that extend it (neutral), and characters that end or change it.
HEADS = ["x\n", "x\r\n", "!\n", "a/\n", "x ʰ", "ʰ", "a\u0301", "中", "x ", "ab'S", "abʰ", "\u0301", "!",
         "Ab", "ǅ", "ª", " \n", "1", "<|endoftext|>", "<|endof"]
UNITS = [" ", "\t", "\u3000", "\u00a0", "A", "B", "ǅ", "\u0301", "ʰ", "a", "中", "!", "1", "\n", "\r"]
ENDS = ["y", "\n", "a", "'s", "'S", "ʰ", "b", " ", "!", "Z", "中", "", "\r\n", "<|endoftext|>", "x'll"]

part_st = st.tuples(st.sampled_from(HEADS), st.lists(st.sampled_from(UNITS), min_size=1, max_size=3),
                    st.integers(1, 400), st.sampled_from(ENDS)).map(
    lambda t: t[0] + ("".join(t[1]) * t[2]) + t[3])
held_text_st = st.lists(part_st, min_size=1, max_size=4).map("".join)
sizes_st = st.lists(st.integers(1, 90), min_size=1, max_size=6)


def _cut(seq, sizes):
    out, i, k = [], 0, 0
    while i < len(seq):
        n = sizes[k % len(sizes)]
        out.append(seq[i:i + n])
        i += n
        k += 1
    return out


class _NoShortcut(StreamEncoder):
    """The encoder without the held-run shortcut: every call runs the full step."""

    def _push(self, data, final):
        self._st[K.S_BLK] = K.B_NONE
        return super()._push(data, final)


def _per_call(se, chunks, as_bytes):
    out = [(se.feed_bytes(c) if as_bytes else se.feed(c)).tolist() for c in chunks]
    out.append(se.finish().tolist())
    return out


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "r50k_base"])
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(text=held_text_st, sizes=sizes_st, as_bytes=st.booleans(), long_min=st.sampled_from([1, None]),
       allowed=st.sampled_from([set(), "all"]))
def test_held_runs_random_chunkings(warm, name, text, sizes, as_bytes, long_min, allowed):
    """Exact against encode for random chunkings, and per call identical to the encoder without the
    shortcut (so skipping the held run never changes what is emitted, nor when)."""
    enc = warm(name)
    kw = {"allowed_special": allowed, "disallowed_special": ()}
    if long_min is not None:
        kw["long_min"] = long_min
    seq = text.encode("utf-8") if as_bytes else text
    chunks = _cut(seq, sizes)
    got = _per_call(StreamEncoder(enc, **kw), chunks, as_bytes)
    ref = _per_call(_NoShortcut(enc, **kw), chunks, as_bytes)
    assert got == ref
    assert [i for part in got for i in part] == enc.encode(text, **kw if "long_min" not in kw else
                                                           {k: v for k, v in kw.items() if k != "long_min"})


def test_shortcut_is_taken(warm):
    """The held-run shortcut is what makes the case linear: once the run is held the state records
    it, nothing is emitted, and the held text is neither re-scanned nor copied on each call."""
    enc = warm("o200k_base")
    se = enc.stream_encoder()
    parts = [se.feed("x\n"), se.feed(" " * 64)]  # "x" settles here
    for _ in range(100):
        got = se.feed(" " * 64)
        assert len(got) == 0
        assert se._st[K.S_BLK] == K.B_WS
    assert se.buffered_bytes >= 101 * 64
    parts += [se.feed("y"), se.finish()]
    assert np.concatenate(parts).tolist() == enc.encode("x\n" + " " * 101 * 64 + "y")
