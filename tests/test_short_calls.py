"""The per-call paths: the table handle (kernels/handle.py), ASCII text read in place, the default
special-token policy, count(), and one long text split over the cores."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tltok_jit.kernels import handle as KH
from tltok_jit.engine.threads import resolve_threads

ENCODINGS = ["r50k_base", "cl100k_base", "o200k_base"]


def _str_call(ca, mode, text):
    """encode_str_call as the Encoding calls it: its compiled entry, the str read in place."""
    return KH.str_call_entry()(ca, mode, text)


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=40)
       | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_short_texts_equal_tiktoken(name, text, ours, tiktoken_oracle):
    enc, oracle = ours(name), tiktoken_oracle(name)
    assert enc.encode_ordinary(text) == oracle.encode_ordinary(text)
    assert enc.encode(text, disallowed_special=()) == oracle.encode(text, disallowed_special=())
    assert enc.count(text, disallowed_special=()) == len(oracle.encode(text, disallowed_special=()))
    try:  # tiktoken's defaults: the shared call handle's path
        want = oracle.encode(text)
    except ValueError:
        with pytest.raises(ValueError):
            enc.encode(text)
    else:
        assert enc.encode(text) == want and enc.count(text) == len(want)


@pytest.mark.parametrize("name", ENCODINGS)
def test_lone_surrogates_leave_the_short_path_exact(name, ours, tiktoken_oracle):
    enc, oracle = ours(name), tiktoken_oracle(name)
    for text in ["\ud800", "a\udfffb", "é\ud83d\ude00 x", "\ud83d\ude00", "日本\udc00語"]:
        assert enc.encode_ordinary(text) == oracle.encode_ordinary(text)
        assert enc.encode(text) == oracle.encode(text)
        assert enc.count(text) == len(oracle.encode(text))


@pytest.mark.parametrize("name", ENCODINGS)
def test_specials_on_the_short_path(name, ours, tiktoken_oracle):
    enc, oracle = ours(name), tiktoken_oracle(name)
    for text in ["<|endoftext|>", "a <|endoftext|> b", "<|endoftext", "< |endoftext|>", "<<|endoftext|>>",
                 "\ud800<|endoftext|>", "ünï<|endoftext|>", "no special here"]:
        if "<|endoftext|>" in text:
            with pytest.raises(ValueError, match="disallowed special token"):
                oracle.encode(text)
            with pytest.raises(ValueError, match="disallowed special token"):
                enc.encode(text)
            with pytest.raises(ValueError, match="disallowed special token"):
                enc.count(text)
        else:
            assert enc.encode(text) == oracle.encode(text)
        fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        assert enc.encode(text, allowed_special="all") == oracle.encode(fixed, allowed_special="all")


def test_count_is_len_of_encode(ours):
    enc = ours("o200k_base")
    for text in ["", "hello world", "日本語のテキスト", "x" * 5000]:
        assert enc.count(text) == len(enc.encode(text))


def test_handle_refuses_a_layout_it_does_not_know(ours):
    enc = ours("r50k_base")
    cache, _work = enc.engine.serial_workspace()
    T = enc.engine.tables
    wrong = T._replace(tok_offsets=T.tok_offsets.astype(np.int32))
    with pytest.raises(ValueError, match="handle layout"):
        KH.handle_of(wrong, cache)
    writable = T._replace(config=T.config.copy())
    with pytest.raises(ValueError, match="handle layout"):
        KH.handle_of(writable, cache)


@pytest.mark.parametrize("name", ["r50k_base", "o200k_base"])
def test_long_text_on_several_threads_is_exact(name, ours, tiktoken_oracle):
    from conftest import SHARED
    from test_interim import corpus_texts

    enc, oracle = ours(name), tiktoken_oracle(name)
    if (SHARED / "corpora").is_dir():
        text = (SHARED / "corpora" / "english-war-and-peace.txt").read_text()[:1_500_000]
        text += (SHARED / "corpora" / "chinese-sanguo-yanyi.txt").read_text()[:300_000]
    else:  # the committed UDHR openings, repeated past the size where the text is split
        text = "\n".join(corpus_texts()) * 5
    assert len(text) >= 1 << 20
    text += " tail <|endoftext|>"
    expected = oracle.encode(text, disallowed_special=())
    one = enc.encode_to_numpy(text, disallowed_special=(), num_threads=1)
    assert one.tolist() == expected
    for threads in (2, 3, 0, None):
        assert enc.encode(text, disallowed_special=(), num_threads=threads) == expected
    assert enc.encode_ordinary(text, num_threads=2) == oracle.encode_ordinary(text)
    assert enc.encode(text, allowed_special="all", num_threads=2) == oracle.encode(text, allowed_special="all")
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode(text, num_threads=2)
    # the size is counted in UTF-8 bytes: 1.5 MB of Chinese in 0.5 M characters is split too
    if (SHARED / "corpora").is_dir():
        zh = (SHARED / "corpora" / "chinese-sanguo-yanyi.txt").read_text()[:520_000]
    else:  # the committed openings in scripts of 2-3 bytes a character, repeated past 1 MB
        wide = "\n".join(t for t in corpus_texts() if len(t.encode()) >= 2 * len(t))
        zh = wide * (-(-(1 << 20) // len(wide.encode())))
    assert len(zh) < 1 << 20 <= len(zh.encode())
    split = []
    real = enc.engine.encode_split

    def spy(*args):
        ids = real(*args)
        split.append(ids is not None)
        return ids

    enc.engine.encode_split = spy
    try:
        assert enc.encode_ordinary(zh, num_threads=2) == oracle.encode_ordinary(zh)
        assert enc.encode_ordinary(zh, num_threads=1) == oracle.encode_ordinary(zh)  # never split
        assert enc.encode_ordinary(zh) == oracle.encode_ordinary(zh)  # the default: every core
    finally:
        del enc.engine.encode_split
    assert split == ([True, True] if resolve_threads(None) >= 2 else [True, False])
    # no position a pretoken cannot cross (no space after a letter, no newline): one part, still exact
    solid = "中文" * (1 << 19)
    assert enc.encode_ordinary(solid, num_threads=2) == oracle.encode_ordinary(solid)
    # cuts only near the end: the parts are unequal, the ids the same
    late = "x" * (1 << 20) + " word\nline two" * 3
    assert enc.encode_ordinary(late, num_threads=2) == oracle.encode_ordinary(late)


@pytest.mark.parametrize("name", ["r50k_base", "o200k_base"])
def test_latin1_text_is_split_in_characters(name, ours, tiktoken_oracle, monkeypatch):
    """A long Latin-1 text is cut in character space and each part converted by its worker; the ids
    are tiktoken's for any thread count, accents and cuts next to them included."""
    import tltok_jit.engine.core as E

    enc, oracle = ours(name), tiktoken_oracle(name)
    rng = np.random.default_rng(3)
    words = ["café", "naïve", "Zoë's", "don't", "\xa0", "1999", "über", "señor", "ÿ", "façade,", "\n", "\n\n", "  "]
    text = " ".join(rng.choice(words, 260_000).tolist())  # ~1.8 MB of UTF-8, ~1.6 M characters
    assert not text.isascii() and max(text) < "\u0100" and len(text) >= 1 << 20
    parts = []
    real = E.str_utf8_into

    def spy(s, lo, hi, out):
        parts.append((lo, hi))
        return real(s, lo, hi, out)

    monkeypatch.setattr(E, "str_utf8_into", spy)
    expected = oracle.encode(text + " <|endoftext|>", allowed_special="all")
    for threads in (2, 3):
        parts.clear()
        assert enc.encode(text + " <|endoftext|>", allowed_special="all", num_threads=threads) == expected
        assert sorted(parts) == parts and len(parts) == resolve_threads(threads)  # each worker converted its part
        assert parts[0][0] == 0 and parts[-1][1] == len(text) + 14 and all(
            a[1] == b[0] for a, b in zip(parts, parts[1:]))
    assert enc.encode(text + " <|endoftext|>", allowed_special="all", num_threads=1) == expected
    # the size is counted in UTF-8 bytes here too: under 2**20 characters, over 2**20 bytes
    dense = " ".join(rng.choice(["éèê", "ñü", "çà", "ÿ ø", "\n"], 300_000).tolist())
    assert len(dense) < 1 << 20 <= len(dense.encode())
    parts.clear()
    assert enc.encode_ordinary(dense, num_threads=2) == oracle.encode_ordinary(dense)
    assert len(parts) == resolve_threads(2)
    parts.clear()
    short = dense[: len(dense) // 3]  # under 2**20 bytes: one thread, no parts
    assert enc.encode_ordinary(short, num_threads=2) == oracle.encode_ordinary(short) and parts == []


def _call_handle_parts(enc):
    """(handle, its 64-id scratch, merge scratch row, read-only all-False mask, UTF-8 scratch) of
    this thread's serial state, for call_handle_of."""
    cache, work = enc.engine.serial_workspace()
    mask = np.zeros(1, np.bool_)
    mask.flags.writeable = False
    return KH.handle_of(enc.engine.tables, cache), np.empty(64, np.uint32), work[0], mask, np.empty(64, np.uint8)


def test_the_handle_made_in_python_is_the_kernels(ours):
    """handle_of writes the handle in Python; the kernels' own writer (handle_layout.write_handle,
    used by handle_in) gives the same addresses and shapes."""
    from tltok_jit.kernels.handle_layout import write_handle

    for name in ("r50k_base", "o200k_base"):
        enc = ours(name)
        cache, _ = enc.engine.serial_workspace()
        h = KH.handle_of(enc.engine.tables, cache)
        k = np.zeros(KH.HANDLE_LEN, dtype=np.int64)
        write_handle(enc.engine.tables, cache, k)
        assert not h.flags.writeable and h.tolist() == k.tolist()


def test_call_handle_refuses_what_the_kernel_cannot_read(ours):
    enc = ours("r50k_base")
    h, out, vals, mask, utf8 = _call_handle_parts(enc)
    c = KH.call_handle_of(h, out, vals, mask, utf8)
    assert c.shape == (KH.CALL_LEN,) and not c.flags.writeable
    n = _str_call(c.ctypes.data, 0, "hello world")
    assert out[:n].tolist() == enc.encode_ordinary("hello world")
    n = _str_call(c.ctypes.data, 0, "héllo wörld 日本 🙂")
    assert out[:n].tolist() == enc.encode_ordinary("héllo wörld 日本 🙂")
    # longer than the scratch, or a lone surrogate: -1, the caller's general route
    assert _str_call(c.ctypes.data, 0, "x" * 65) == -1
    assert _str_call(c.ctypes.data, 0, "é" * 17) == -1
    assert _str_call(c.ctypes.data, 0, "a\ud800b") == -1
    # as a list made by the kernel: a new list of exact ints, owned by the caller alone; None for the
    # general route
    for text in ("hello world", "héllo wörld 日本 🙂", "", "x" * 64):
        ids = _str_call(c.ctypes.data, KH.AS_LIST, text)
        assert type(ids) is list and all(type(i) is int for i in ids)
        assert ids == enc.encode_ordinary(text) and sys.getrefcount(ids) == 2
    assert _str_call(c.ctypes.data, KH.AS_LIST, "x" * 65) is None
    assert _str_call(c.ctypes.data, KH.AS_LIST, "a\ud800b") is None
    with pytest.raises(ValueError, match="call handle layout"):
        KH.call_handle_of(h, out.astype(np.int64), vals, mask, utf8)
    with pytest.raises(ValueError, match="call handle layout"):
        KH.call_handle_of(h, out, vals.astype(np.int32), mask, utf8)
    with pytest.raises(ValueError, match="call handle layout"):
        KH.call_handle_of(h, out, vals, mask, utf8.astype(np.int8))
    with pytest.raises(ValueError, match="not a handle"):
        KH.call_handle_of(h[:-1], out, vals, mask, utf8)
    hot = np.ones(1, np.bool_)
    hot.flags.writeable = False
    with pytest.raises(ValueError, match="all-False"):
        KH.call_handle_of(h, out, vals, hot, utf8)


def test_call_slots_stand_for_the_call_handle_address(ours, monkeypatch):
    from tltok_jit.kernels import pyargs

    enc = ours("r50k_base")
    c = KH.call_handle_of(*_call_handle_parts(enc))
    slot = pyargs.take_slot(c.ctypes.data)
    try:
        assert 0 < slot < pyargs.SLOTS
        text = "a slot, not an address"
        before = sys.getrefcount(text)  # the str is read in place: no reference kept or leaked
        assert _str_call(slot, KH.AS_LIST, text) == enc.encode_ordinary(text) == _str_call(c.ctypes.data, KH.AS_LIST, text)
        assert _str_call(slot, 0, text) == len(enc.encode_ordinary(text))
        assert sys.getrefcount(text) == before

        class Sub(str):
            pass

        assert _str_call(slot, KH.AS_LIST, Sub("sub class")) == enc.encode_ordinary("sub class")
    finally:
        pyargs.release_slot(slot)
    # an emptied slot (or a negative number) gives the general route's answer, never a read
    assert _str_call(slot, KH.AS_LIST, "x") is None and _str_call(slot, 0, "x") == -1
    assert _str_call(-5, KH.AS_LIST, "x") is None
    with pytest.raises(ValueError, match="not a data address"):
        pyargs.take_slot(7)
    monkeypatch.setattr(pyargs, "_free", [])  # every slot taken: the address itself
    assert pyargs.take_slot(c.ctypes.data) == c.ctypes.data


def test_call_handle_refuses_texts_with_its_refused_byte(ours):
    enc = ours("r50k_base")
    c = KH.call_handle_of(*_call_handle_parts(enc), refused=ord("<"))
    at, refuse = c.ctypes.data, KH.REFUSE_ADDED
    for text in ("a<b", "<", "x" * 20 + "<", "é<", "日本<|endoftext|>"):
        assert _str_call(at, KH.AS_LIST | refuse, text) is None and _str_call(at, refuse, text) == -1
        assert _str_call(at, KH.AS_LIST, text) == enc.encode_ordinary(text)  # the mode asks for it
    for text in ("a>b", "é", "", "hello world"):
        assert _str_call(at, KH.AS_LIST | refuse, text) == enc.encode_ordinary(text)
        assert _str_call(at, refuse, text) == len(enc.encode_ordinary(text))
    none = KH.call_handle_of(*_call_handle_parts(enc))  # no refused byte: the mode refuses nothing
    assert _str_call(none.ctypes.data, KH.AS_LIST | refuse, "a<b") == enc.encode_ordinary("a<b")
    with pytest.raises(ValueError, match="refused byte"):
        KH.call_handle_of(*_call_handle_parts(enc), refused=0xE6)


@pytest.mark.parametrize("specials", [{"<|endoftext|>": 50256, "[X]": 50257}, {"<|endoftext|>": 50256},
                                      {"éx": 50256}, {}])
def test_default_calls_refuse_every_added_token(specials, tiktoken_oracle):
    """encode / count with tiktoken's defaults on a text holding an added token raise as tiktoken's,
    whether the kernel tests the tokens' one ASCII first character or Python tests theirs."""
    from stream_helpers import rank_file

    import tltok_jit
    from tltok_jit.errors import DisallowedSpecialTokenError

    enc = tltok_jit.Encoding.from_tiktoken_file(rank_file("r50k_base"), special_tokens=specials)
    oracle = tiktoken_oracle("r50k_base")
    for text in ("hello world", "a < b", "[y] éa"):  # twice: the first call installs the held calls
        for _ in range(2):
            assert enc.encode(text) == oracle.encode_ordinary(text) and enc.count(text) == len(enc.encode(text))
    for token in specials:
        for text in (token, f"hi {token}!", f"é{token}"):
            for _ in range(2):
                with pytest.raises(DisallowedSpecialTokenError):
                    enc.encode(text)
                with pytest.raises(DisallowedSpecialTokenError):
                    enc.count(text)
            assert enc.encode(text, disallowed_special=()) == oracle.encode_ordinary(text)


def test_call_handle_lists_hold_the_prebuilt_int_objects(ours):
    from tltok_jit.engine import pylist
    from tltok_jit.engine.pylist import IntObjects

    enc = ours("r50k_base")
    h, out, vals, mask, utf8 = _call_handle_parts(enc)
    want = enc.encode_ordinary("hello world, Mr. Bennet")
    objs = IntObjects(max(want))  # the largest id is outside the table: it gets a new int
    if not objs.immortal:
        pytest.skip("immortal int objects need CPython 3.10/3.11 (elsewhere the lists hold new ints)")
    c = KH.call_handle_of(h, out, vals, mask, utf8, int_objects=objs.addrs)
    shared = [i for i in want if 257 <= i < max(want)][:3]
    assert shared
    before = [sys.getrefcount(objs.objects[i]) for i in shared]
    ids = _str_call(c.ctypes.data, KH.AS_LIST, "hello world, Mr. Bennet")
    assert ids == want and type(ids) is list and sys.getrefcount(ids) == 2
    for got in ids:
        if got < max(want):
            assert got is objs.objects[got]
        else:
            assert got == max(want) and all(got is not o for o in objs.objects[-3:])
    # immortal objects: the list takes no reference; freeing it gives one back per use
    assert [sys.getrefcount(objs.objects[i]) for i in shared] == before
    assert min(before) > pylist.IMMORTAL_BIAS // 2
    del ids
    assert [b - sys.getrefcount(objs.objects[i]) for i, b in zip(shared, before)] == [want.count(i) for i in shared]
    with pytest.raises(ValueError, match="int64"):
        KH.call_handle_of(h, out, vals, mask, utf8, int_objects=objs.addrs.astype(np.int32))


@pytest.mark.parametrize("name", ["r50k_base", "o200k_base"])
def test_short_path_texts_that_release_the_gil(name, ours, tiktoken_oracle):
    """Texts past KH.GIL_HELD_CHARS (the kernel encodes them without the GIL) up to the scratch's
    size, from several threads at once: each thread's ids equal tiktoken's."""
    import threading

    enc, oracle = ours(name), tiktoken_oracle(name)
    rng = np.random.default_rng(7)
    words = ["the", " cat", " 日本語", "  ", "\n", " héllo", "42", "!?", " Ωμέγα", "🙂"]
    texts = ["".join(rng.choice(words, size=k)) for k in (60, 100, 300, 900)]
    texts = [t for t in texts if len(t) > KH.GIL_HELD_CHARS] + ["x" * (KH.GIL_HELD_CHARS + 1)]
    assert texts
    want = [oracle.encode_ordinary(t) for t in texts]
    errors = []

    def run():
        try:
            for _ in range(50):
                for t, w in zip(texts, want):
                    if enc.encode_ordinary(t) != w or enc.count(t) != len(w):
                        errors.append(t)
                        return
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:1]


def test_shared_call_handle_refuses_texts_encoded_without_the_gil(ours):
    """A shared call handle is never used with the GIL released: past KH.GIL_HELD_CHARS characters
    the kernel gives the general-route answer, even when the text fits its scratch."""
    enc = ours("r50k_base")
    cache, work = enc.engine.serial_workspace()
    h = KH.handle_of(enc.engine.tables, cache)
    n_out = 4 * KH.GIL_HELD_CHARS + 64
    out, utf8 = np.empty(n_out, np.uint32), np.empty(n_out, np.uint8)
    mask = np.zeros(1, np.bool_)
    mask.flags.writeable = False
    ca = KH.call_handle_of(h, out, work[0], mask, utf8, shared=True)
    at = ca.ctypes.data
    edge = "ab " * (KH.GIL_HELD_CHARS // 3) + "x" * (KH.GIL_HELD_CHARS % 3)
    assert len(edge) == KH.GIL_HELD_CHARS
    assert _str_call(at, KH.AS_LIST, edge) == enc.encode_ordinary(edge)
    assert _str_call(at, KH.AS_LIST, edge + "y") is None
    assert _str_call(at, 0, edge + "y") == -1
    assert _str_call(at, KH.AS_LIST, "é" * (KH.GIL_HELD_CHARS + 1)) is None
    private = KH.call_handle_of(h, out, work[0], mask, utf8)
    assert _str_call(private.ctypes.data, KH.AS_LIST, edge + "y") == enc.encode_ordinary(edge + "y")


@pytest.mark.parametrize("name", ["r50k_base", "o200k_base"])
def test_shared_short_calls_from_several_threads(name, ours, tiktoken_oracle):
    """encode_ordinary, encode and count with tiktoken's defaults on texts of up to
    KH.GIL_HELD_CHARS characters share one call handle per Encoding (the kernel holds the GIL):
    four threads at once get tiktoken's ids, and a special token in the text is still refused."""
    import threading

    enc, oracle = ours(name), tiktoken_oracle(name)
    rng = np.random.default_rng(11)
    words = ["the", " cat", " 日本語", "  ", "\n", " héllo", "42", "!?", " Ωμέγα", "🙂", "<", "|>"]
    texts = ["".join(rng.choice(words, size=k)) for k in rng.integers(1, 60, size=200)]
    texts = [t for t in texts if len(t) <= KH.GIL_HELD_CHARS]
    want = [oracle.encode(t) for t in texts]
    enc.encode_ordinary(texts[0])
    enc.encode_ordinary(texts[1])
    assert enc.engine._held_state is not None  # the shared path is the one under test
    errors = []

    def run():
        try:
            for _ in range(20):
                for t, w in zip(texts, want):
                    if enc.encode_ordinary(t) != w or enc.encode(t) != w or enc.count(t) != len(w):
                        errors.append(t)
                        return
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:1]
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode("a <|endoftext|>")
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.count("a <|endoftext|>")


@pytest.mark.parametrize("name", ["r50k_base", "o200k_base"])
def test_rows_with_nulls_and_empty_rows_in_batches(name, ours, tiktoken_oracle):
    """encode_rows writes each worker's rows one after another (and a batch of rows packed after
    it is encoded): nulls, empty rows, more rows than a batch, any thread count, added tokens."""
    enc, oracle = ours(name), tiktoken_oracle(name)
    texts = [("row %d: naïve café 東京 🙂 " % i) * (1 + i % 7) if i % 5 else "" for i in range(700)]
    texts[3] = "x" * 5000 + " tail"
    texts[600] = "<|endoftext|> in a row"
    raw = [t.encode() for t in texts]
    data = np.frombuffer(b"".join(raw), dtype=np.uint8)
    offsets = np.cumsum([0] + [len(b) for b in raw]).astype(np.int64)
    valid = np.array([i % 11 != 4 for i in range(len(texts))], dtype=np.uint8)
    want = [oracle.encode_ordinary(t) if v else [] for t, v in zip(texts, valid)]
    for threads in (1, 2, 3):
        ids, io = enc.encode_rows(data, offsets, valid, num_threads=threads)
        assert [ids[io[i]:io[i + 1]].tolist() for i in range(len(texts))] == want, threads
        assert enc.encode_ordinary_batch(texts, num_threads=threads) == [oracle.encode_ordinary(t) for t in texts]
    allowed = enc.encode_batch(texts, allowed_special="all", num_threads=2)
    assert allowed == oracle.encode_batch(texts, allowed_special="all")


def test_free_threaded_builds_never_share_a_call_handle(monkeypatch, tiktoken_oracle):
    """Without a GIL nothing serializes the shared call handle's scratch: short calls then take their
    thread's own handle, with the same ids."""
    import tltok_jit
    from tltok_jit.engine import core

    monkeypatch.setattr(core, "_FREE_THREADED", True)
    enc = tltok_jit.Encoding(tltok_jit.get_encoding("r50k_base")._model)
    oracle = tiktoken_oracle("r50k_base")
    for t in ("hello world", "ünï 日本", "a b c " * 20):
        assert enc.encode(t) == oracle.encode(t)
        assert enc.count(t) == len(oracle.encode(t))
    assert enc.engine._held_state == ()
