"""Streaming decode: StreamDecoder, decode_incremental, token_pieces, MultiStreamDecoder, ByteTokenizer.

The oracle everywhere is decode(ids) = b"".join(token bytes).decode("utf-8", "replace").
"""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import missing_reason
from naive import naive_byte_decode
from stream_helpers import corpus_dir, rank_table, tiktoken_encoding
from tltok_jit.kinds.bytetok import ByteTokenizer
from tltok_jit.kernels import stream_decode as K
from tltok_jit.streaming.decode import (
    MultiStreamDecoder,
    StreamDecoder,
    decode_incremental,
    incomplete_tail_start,
    token_pieces,
)

FFFD = "\ufffd"
BT = ByteTokenizer()
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    derandomize=True)


def ref_decode(enc, ids) -> str:
    if isinstance(enc, ByteTokenizer):
        return naive_byte_decode(bytes(ids))
    return enc.decode(ids)


@functools.lru_cache(maxsize=None)
def _proper_prefixes() -> frozenset:
    """Every proper prefix of the UTF-8 encoding of every scalar value (the definition, enumerated)."""
    out = set()
    for cp in range(0x80, 0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        e = chr(cp).encode("utf-8")
        out.update(e[:k] for k in range(1, len(e)))
    return frozenset(out)


def completable(tail: bytes) -> bool:
    """Is `tail` a proper prefix of one well-formed UTF-8 character?"""
    return tail in _proper_prefixes()


def held_tail(buf: bytes) -> bytes:
    """The completable tail the decoder must hold after seeing `buf` (brute force)."""
    for j in (3, 2, 1):
        if len(buf) >= j and completable(buf[-j:]):
            # must also be a maximal split point: the bytes before it do not absorb its lead
            return buf[-j:]
    return b""


# --------------------------------------------------------------------------- id strategies


def _invalid_utf8_ids(enc) -> list[int]:
    bad = []
    for i in enc.valid_ids.tolist():
        try:
            enc.by_id[i].decode("utf-8")
        except UnicodeDecodeError:
            bad.append(i)
    return bad


def id_lists(enc, max_size=40):
    """Random ids, weighted towards tokens whose bytes are not valid UTF-8 on their own."""
    if isinstance(enc, ByteTokenizer):
        edges = [0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0x41]
        return st.lists(st.one_of(st.integers(0, 255), st.sampled_from(edges)), max_size=max_size)
    bad = _invalid_utf8_ids(enc)
    valid = enc.valid_ids
    any_id = st.integers(0, len(valid) - 1).map(lambda k: int(valid[k]))
    return st.lists(st.one_of(st.sampled_from(bad), any_id, st.sampled_from(enc.special_ids)), max_size=max_size)


def encodings():
    return [BT, rank_table("r50k_base"), rank_table("cl100k_base")]


ENC_IDS = ["bytes", "r50k_base", "cl100k_base"]


# --------------------------------------------------------------------------- hand cases


def test_gpt2_split_emoji():
    r50k = rank_table("r50k_base")
    assert r50k.by_id[47249] == b"\xf0\x9f\x98" and r50k.by_id[222] == b"\x80"
    d = StreamDecoder(r50k)
    assert d.push(47249) == ""
    assert d.pending == b"\xf0\x9f\x98"
    assert d.push(222) == "\U0001F600"
    assert d.pending == b""
    assert d.finish() == ""
    # the same through every other form
    assert token_pieces(r50k, [47249, 222]) == ["", "\U0001F600"]
    assert token_pieces(r50k, [47249]) == [FFFD]
    state: dict = {}
    assert decode_incremental(r50k, [47249], state) == ""
    assert state["text"] == ""  # the incomplete character is held back
    assert decode_incremental(r50k, [222], state) == "\U0001F600"
    assert state["text"] == "\U0001F600"
    m = MultiStreamDecoder(r50k, 2)
    assert m.step([47249, 222]) == ["", FFFD]
    assert m.pending(0) == b"\xf0\x9f\x98" and m.pending(1) == b""
    assert m.step([222, 47249]) == ["\U0001F600", ""]
    assert m.finish(1) == FFFD and m.finish(0) == ""


def test_bytes_c3_a9_ff_e2_82_byte_by_byte():
    data = bytes.fromhex("C3 A9 FF E2 82")
    d = StreamDecoder(BT)
    chunks, pendings = [], []
    for b in data:
        chunks.append(d.push(b))
        pendings.append(d.pending)
    assert chunks == ["", "é", FFFD, "", ""]
    assert pendings == [b"\xc3", b"", b"", b"\xe2", b"\xe2\x82"]
    assert d.finish() == FFFD
    assert d.pending == b""
    assert "".join(chunks) + FFFD == data.decode("utf-8", "replace") == "é" + FFFD + FFFD
    assert token_pieces(BT, list(data)) == ["", "é", FFFD, "", FFFD]
    assert BT.token_pieces(list(data)) == ["", "é", FFFD, "", FFFD]
    m = MultiStreamDecoder(BT, 1)
    assert [m.step([b])[0] for b in data] == chunks
    assert m.pending(0) == b"\xe2\x82"
    assert m.finish(0) == FFFD


@pytest.mark.parametrize("data, chunks, final", [
    (b"\xe2\x82\xac", ["", "", "€"], ""),
    (b"\xe2\x82A", ["", "", FFFD + "A"], ""),           # truncated 3-byte: one U+FFFD, A starts afresh
    (b"\xe0\x80", ["", FFFD * 2], ""),                 # E0 waits; 80 is not allowed after E0
    (b"\xed\xa0\x80", ["", FFFD * 2, FFFD], ""),       # surrogate D800: three maximal subparts
    (b"\xf4\x90\x80\x80", ["", FFFD * 2, FFFD, FFFD], ""),  # > U+10FFFF
    (b"\xf0\x90\x80", ["", "", ""], FFFD),             # incomplete 4-byte: waits, then one U+FFFD
    (b"\xc0\xaf", [FFFD, FFFD], ""),                   # overlong lead
    (b"\xf5", [FFFD], ""),
    (b"\xc3\xc3\xa9", ["", FFFD, "é"], ""),
    (b"\xf0\x9f\x98\x80", ["", "", "", "\U0001F600"], ""),
])
def test_utf8_hand_cases(data, chunks, final):
    d = StreamDecoder(BT)
    assert [d.push(b) for b in data] == chunks
    assert d.finish() == final
    assert "".join(chunks) + final == data.decode("utf-8", "replace")
    m = MultiStreamDecoder(BT, 1)
    assert [m.step([b])[0] for b in data] == chunks
    assert m.finish(0) == final
    state: dict = {}
    deltas = []
    for k, b in enumerate(data):
        deltas.append(decode_incremental(BT, [b], state))
        assert state["text"] == "".join(deltas)
        assert data[: k + 1].decode("utf-8", "replace").startswith(state["text"])
    assert deltas == chunks
    assert decode_incremental(BT, [], state, final=True) == final


# --------------------------------------------------------------------------- the tail rule


def test_incomplete_tail_exhaustive_two_bytes():
    for b0 in range(256):
        one = bytes([b0])
        assert incomplete_tail_start(one) == (0 if completable(one) else 1), one
        for b1 in range(256):
            two = bytes([b0, b1])
            assert two[incomplete_tail_start(two):] == held_tail(two), two


@SETTINGS
@given(st.binary(min_size=0, max_size=8))
def test_incomplete_tail_random(buf):
    cut = incomplete_tail_start(buf)
    assert buf[cut:] == held_tail(buf)
    assert len(buf) - cut <= 3
    # the split is compositional, and the tail alone decodes to one U+FFFD
    assert buf[:cut].decode("utf-8", "replace") + buf[cut:].decode("utf-8", "replace") == \
        buf.decode("utf-8", "replace")
    if cut < len(buf):
        assert buf[cut:].decode("utf-8", "replace") == FFFD


# --------------------------------------------------------------------------- StreamDecoder property


@pytest.mark.parametrize("which", range(3), ids=ENC_IDS)
def test_stream_decoder_equals_decode(which):
    enc = encodings()[which]

    @SETTINGS
    @given(id_lists(enc))
    def check(ids):
        d = StreamDecoder(enc)
        out = ""
        raw = b""
        for k, t in enumerate(ids):
            out += d.push(t)
            raw += BT.decode_bytes([t]) if enc is BT else enc.by_id[t]
            p = d.pending
            assert len(p) <= 3
            assert p == held_tail(raw)
            # emitted text + the pending tail (one U+FFFD) is the decode of the prefix
            assert out + (FFFD if p else "") == ref_decode(enc, ids[: k + 1])
        out += d.finish()
        assert d.pending == b""
        assert out == ref_decode(enc, ids)

    check()


@pytest.mark.parametrize("which", range(3), ids=ENC_IDS)
def test_push_many_equals_push(which):
    enc = encodings()[which]

    @SETTINGS
    @given(id_lists(enc), st.lists(st.integers(0, 5), max_size=12))
    def check(ids, cuts):
        a, b = StreamDecoder(enc), StreamDecoder(enc)
        one = "".join(a.push(t) for t in ids)
        many, i = "", 0
        for c in cuts + [len(ids)]:
            many += b.push_many(ids[i:i + c] if c else [])
            i += c
        many += b.push_many(ids[i:])
        assert one == many and a.pending == b.pending
        assert one + a.finish() == ref_decode(enc, ids)

    check()


# --------------------------------------------------------------------------- decode_incremental and token_pieces


@pytest.mark.parametrize("which", range(3), ids=ENC_IDS)
def test_decode_incremental(which):
    enc = encodings()[which]

    @SETTINGS
    @given(id_lists(enc), st.lists(st.integers(0, 6), max_size=12), st.booleans())
    def check(ids, sizes, as_numpy):
        state: dict = {}
        deltas, i = [], 0
        full = ref_decode(enc, ids)
        for c in sizes + [len(ids)]:
            chunk = ids[i:i + c]
            i += len(chunk)
            if as_numpy:
                chunk = np.array(chunk, dtype=np.int64)
            deltas.append(decode_incremental(enc, chunk, state))
            so_far = "".join(deltas)
            assert state["text"] == so_far
            assert full.startswith(so_far)  # deltas never carry a U+FFFD the full text will not have
            prefix = ref_decode(enc, ids[:i])
            assert prefix.startswith(so_far) and len(prefix) - len(so_far) <= 1
            if i == len(ids):
                break
        tail = decode_incremental(enc, [], state, final=True)
        assert tail in ("", FFFD)
        assert "".join(deltas) + tail == full == state["text"]

    check()


@pytest.mark.parametrize("which", range(3), ids=ENC_IDS)
def test_token_pieces(which):
    enc = encodings()[which]

    @SETTINGS
    @given(id_lists(enc))
    def check(ids):
        pieces = token_pieces(enc, ids)
        assert len(pieces) == len(ids)
        assert "".join(pieces) == ref_decode(enc, ids)
        d = StreamDecoder(enc)
        expect = [d.push(t) for t in ids]
        if expect:
            expect[-1] += d.finish()
        assert pieces == expect
        assert token_pieces(enc, np.array(ids, dtype=np.int64)) == pieces

    check()


def test_token_pieces_flush_tail_onto_last_token():
    r50k = rank_table("r50k_base")
    hello = tiktoken_encoding("r50k_base").encode("hi 😀")
    assert hello[-2:] == [30325, 222]  # " \xf0\x9f\x98", "\x80"
    pieces = token_pieces(r50k, hello)
    assert FFFD not in "".join(pieces)
    assert pieces[-2:] == [" ", "\U0001F600"]
    cut = token_pieces(r50k, hello[:-1])
    assert cut[-1] == " " + FFFD and "".join(cut) == r50k.decode(hello[:-1])


# --------------------------------------------------------------------------- real text


def _texts():
    cdir = corpus_dir()
    out = ["hello 😀 wörld — 你好, мир! 👩‍👩‍👧‍👦 🇺🇳 \U0010FFFD"]
    for name in ("emoji-test.txt", "udhr"):
        p = cdir / name
        if not p.exists():
            pytest.skip(missing_reason(p))
    out.append((cdir / "emoji-test.txt").read_text("utf-8")[:60_000])
    udhr = sorted((cdir / "udhr").glob("*.txt"))
    out.extend(p.read_text("utf-8")[:4000] for p in udhr[::7])
    return out


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base"])
def test_real_text_streams(name):
    enc, tt = rank_table(name), tiktoken_encoding(name)
    rng = random.Random(5)
    for text in _texts():
        ids = tt.encode(text)
        # whole text, and a slice starting mid-character
        for sl in (ids, ids[rng.randrange(len(ids)):][:3000]):
            expect = tt.decode(sl)
            d = StreamDecoder(enc)
            chunks = [d.push(t) for t in sl]
            assert "".join(chunks) + d.finish() == expect
            assert "".join(token_pieces(enc, sl)) == expect
        assert "".join(token_pieces(enc, ids)) == text


# --------------------------------------------------------------------------- many streams


@pytest.mark.parametrize("which", range(3), ids=ENC_IDS)
def test_multistream_equals_per_stream_loop(which):
    enc = encodings()[which]
    ids_st = id_lists(enc, max_size=1).map(lambda x: x[0] if x else None)

    @SETTINGS
    @given(st.integers(1, 6).flatmap(lambda n: st.tuples(
        st.just(n),
        st.lists(st.tuples(st.lists(ids_st, min_size=n, max_size=n),
                           st.lists(st.booleans(), min_size=n, max_size=n),
                           st.sampled_from(["all", "mask", "index"])), max_size=25))),
           st.sampled_from([K.AUTO, K.ALL, K.SLOW_ONLY]))
    def check(arg, mode):
        n, steps = arg
        m = MultiStreamDecoder(enc, n)
        m._mode = mode  # every output mode of the kernel must give the same deltas
        ref = [StreamDecoder(enc) for _ in range(n)]
        for ids, mask, how in steps:
            ids = [0 if t is None else t for t in ids]
            if how == "all":
                got = m.step(np.array(ids, dtype=np.int64))
                exp = [r.push(t) for r, t in zip(ref, ids)]
            elif how == "mask":
                filler = [t if a else -1 for t, a in zip(ids, mask)]  # inactive ids are never read
                got = m.step_masked(np.array(filler), np.array(mask))
                exp = [r.push(t) if a else "" for r, t, a in zip(ref, ids, mask)]
            else:
                idx = [i for i in range(n) if mask[i]][::-1]
                got = m.step([ids[i] for i in idx], idx)
                exp = [ref[i].push(ids[i]) for i in idx]
            assert got == exp
            for i in range(n):
                assert m.pending(i) == ref[i].pending
                assert len(m.pending(i)) <= 3 and m.pending_count[i] <= 3
        assert [m.finish(i) for i in range(n)] == [r.finish() for r in ref]
        assert all(m.pending(i) == b"" for i in range(n))

    check()


def test_multistream_duplicate_streams_in_one_step():
    r50k = rank_table("r50k_base")
    m = MultiStreamDecoder(r50k, 3)
    # one stream fed twice in one call, in order: the emoji completes within the step
    assert m.step([47249, 222, 47249], [1, 1, 2]) == ["", "\U0001F600", ""]
    assert m.pending(1) == b"" and m.pending(2) == b"\xf0\x9f\x98"
    # more entries than streams (buffers grow)
    text = "😀" * 200
    ids = tiktoken_encoding("r50k_base").encode(text)
    got = m.step(ids, [0] * len(ids))
    assert "".join(got) == text and m.pending(0) == b""


def test_multistream_long_tokens_and_reset():
    cl = rank_table("cl100k_base")
    longest = max(cl.valid_ids.tolist(), key=lambda i: len(cl.by_id[i]))
    m = MultiStreamDecoder(cl, 4)
    d = [StreamDecoder(cl) for _ in range(4)]
    ids = [longest, 100257, longest, 0]
    assert m.step(ids) == [x.push(t) for x, t in zip(d, ids)]
    m2 = MultiStreamDecoder(BT, 2)
    m2.step([0xF0, 0xE2])
    m2.reset(0)
    assert m2.pending(0) == b"" and m2.pending(1) == b"\xe2"
    m2.reset()
    assert m2.finish_all() == ["", ""]
    m2.step([0xF0, 0x41])
    assert m2.finish_all() == [FFFD, ""]


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("name, bad", [("r50k_base", 50257), ("r50k_base", -1), ("r50k_base", 10**30),
                                       ("cl100k_base", 100256), ("cl100k_base", 100270),
                                       ("cl100k_base", 100277), ("bytes", 256), ("bytes", -3)])
def test_bad_ids_raise_valueerror_naming_id_and_size(name, bad):
    enc = BT if name == "bytes" else rank_table(name)
    size = str(enc.n_vocab)

    def check(fn):
        with pytest.raises(ValueError) as e:
            fn()
        assert str(bad) in str(e.value) and size in str(e.value), str(e.value)

    d = StreamDecoder(enc)
    d.push(0xC3 if enc is BT else 47249 if name == "r50k_base" else 0)
    before = d.pending
    check(lambda: d.push(bad))
    assert d.pending == before
    check(lambda: d.push_many([1, bad]))
    assert d.pending == before
    state: dict = {}
    decode_incremental(enc, [1], state)
    snap = dict(state)
    check(lambda: decode_incremental(enc, [2, bad], state))
    assert state == snap
    check(lambda: token_pieces(enc, [1, bad]))
    if -(2**63) <= bad < 2**63:
        check(lambda: decode_incremental(enc, np.array([2, bad]), {}))
        check(lambda: token_pieces(enc, np.array([1, bad])))
        m = MultiStreamDecoder(enc, 3)
        m.step([0xE2, 0xC3, 0x41] if enc is BT else [47249, 47249, 1] if name == "r50k_base" else [1, 2, 3])
        pend = [m.pending(i) for i in range(3)]
        check(lambda: m.step(np.array([1, 2, bad])))
        check(lambda: m.step([bad], [0]))
        check(lambda: m.step_masked([1, bad, 2], [True, True, False]))
        assert [m.pending(i) for i in range(3)] == pend  # a failed step changes nothing
        m.step_masked([1, bad, 2], [True, False, True])  # an inactive stream's id is not read


def test_bad_stream_indices_and_shapes():
    m = MultiStreamDecoder(BT, 3)
    with pytest.raises(IndexError):
        m.step([1], [3])
    with pytest.raises(IndexError):
        m.step([1], [-1])
    with pytest.raises(IndexError):
        m.finish(3)
    with pytest.raises(ValueError):
        m.step([1, 2])
    with pytest.raises(ValueError):
        m.step([1, 2], [0])
    with pytest.raises(TypeError):
        m.step(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError):
        StreamDecoder(BT).push("a")
    with pytest.raises(ValueError):
        MultiStreamDecoder(BT, 0)


def test_bad_tables_are_refused():
    class Bad:
        n_vocab = 2

        def __init__(self, data, offsets, valid):
            self.t = (data, offsets, valid)

        def token_byte_table(self):
            return self.t

    u8 = np.uint8
    for data, offsets, valid in [
        (np.zeros(2, u8), np.array([0, 1, 3]), np.ones(2, bool)),    # past the end of data
        (np.zeros(2, u8), np.array([0, 2, 1]), np.ones(2, bool)),    # decreasing
        (np.zeros(2, u8), np.array([0, 1]), np.ones(2, bool)),       # too short
        (np.zeros(2, u8), np.array([0, 1, 2]), np.ones(3, bool)),    # n_vocab mismatch
        (np.zeros(2, np.int32), np.array([0, 1, 2]), np.ones(2, bool)),
    ]:
        with pytest.raises(ValueError):
            StreamDecoder(Bad(data, offsets, valid))


# --------------------------------------------------------------------------- ByteTokenizer


def test_byte_tokenizer_surface():
    assert BT.name == "bytes" and BT.n_vocab == 256 and BT.eot_token is None
    assert BT.special_tokens_set == frozenset() and BT.max_token_value == 255
    text = "héllo 😀"
    ids = list(text.encode())
    assert BT.encode(text) == BT.encode_ordinary(text) == ids
    assert BT.encode("<|endoftext|>", allowed_special="all") == list(b"<|endoftext|>")
    arr = BT.encode_to_numpy(text)
    assert arr.dtype == np.uint32 and arr.tolist() == ids
    assert BT.encode_batch([text, ""]) == BT.encode_ordinary_batch([text, ""]) == [ids, []]
    assert BT.decode(ids) == text and BT.decode(np.array(ids)) == text
    assert BT.decode_bytes(ids) == text.encode()
    assert BT.decode([0xFF, 0x41]) == FFFD + "A"
    with pytest.raises(UnicodeDecodeError):
        BT.decode([0xFF], errors="strict")
    assert BT.encode("a\ud800b") == list(("a" + FFFD + "b").encode())
    assert BT.decode_single_token_bytes(0x41) == b"A"
    for bad in (256, -1):
        with pytest.raises(ValueError, match=f"{bad}.*256"):
            BT.decode_single_token_bytes(bad)
        with pytest.raises(ValueError, match=f"{bad}.*256"):
            BT.decode([65, bad])
        with pytest.raises(ValueError, match=f"{bad}.*256"):
            BT.decode(np.array([65, bad]))
    data, offsets, valid = BT.token_byte_table()
    assert data.tolist() == list(range(256)) and offsets.tolist() == list(range(257)) and valid.all()
    state: dict = {}
    assert BT.decode_incremental([0xE2, 0x82], state) == "" and state["text"] == ""
    assert BT.decode_incremental([0xAC], state) == "€" and state["text"] == "€"


@SETTINGS
@given(st.binary(max_size=64))
def test_byte_tokenizer_roundtrip(raw):
    assert BT.decode_bytes(list(raw)) == raw
    assert BT.decode(list(raw)) == raw.decode("utf-8", "replace")
    text = raw.decode("utf-8", "replace")
    assert BT.decode(BT.encode(text)) == text


# --------------------------------------------------------------------------- the real Encoding, when present


def test_the_real_encoding_streams_like_decode():
    from stream_helpers import rank_file
    from tltok_jit.encoding import Encoding

    enc = Encoding.from_tiktoken_file(rank_file("r50k_base"))
    ids = [31373, 47249, 222, 47249, 50256]
    d = StreamDecoder(enc)
    assert "".join(d.push(t) for t in ids) + d.finish() == enc.decode(ids)
    assert "".join(token_pieces(enc, ids)) == enc.decode(ids)
    with pytest.raises(ValueError, match="50257"):
        d.push(50257)


# --------------------------------------------------------------------------- kernel tables and the bytes form


@pytest.mark.parametrize("which", range(3), ids=ENC_IDS)
def test_complete_table_matches_python(which):
    from tltok_jit.streaming.decode import token_tables

    enc = encodings()[which]
    t = token_tables(enc)
    data, offsets, valid = enc.token_byte_table()
    raw = np.asarray(data).tobytes()
    for i in range(t.n_vocab):
        if not valid[i]:
            assert not t.complete[i] and t.packed[i] & 3 == K.HOLE and t.token_bytes[i] is None
            continue
        b = raw[offsets[i]:offsets[i + 1]]
        try:
            s = b.decode("utf-8")
        except UnicodeDecodeError:
            s = None
        assert bool(t.complete[i]) == (s is not None), (i, b)
        assert t.token_strs[i] == s and t.token_bytes[i] == b
        assert t.packed[i] >> K.KIND_BITS == offsets[i] and t.packed[i] & 3 == (K.COMPLETE if s is not None else K.PARTIAL)
    assert t.packed[-1] >> K.KIND_BITS == offsets[-1]


def test_step_bytes_and_state_views():
    r50k = rank_table("r50k_base")
    m = MultiStreamDecoder(r50k, 3)
    raw, offs = m.step_bytes([47249, 31373, 47249])
    assert offs.tolist() == [0, 0, 5, 5] and raw == b"hello"
    raw, offs = m.step_bytes([222, 0, 220], [0, 1, 2])
    assert [raw[a:b] for a, b in zip(offs[:-1], offs[1:])] == ["\U0001F600".encode(), b"!", "\ufffd ".encode()]
    assert m.pending_count.tolist() == [0, 0, 0]
    m.step([47249, 0, 0])
    assert m.pending_count.tolist() == [3, 0, 0] and m.pending_bytes[0, :3].tobytes() == b"\xf0\x9f\x98"
    with pytest.raises(ValueError):
        m.pending_bytes[0, 0] = 1  # read-only views
