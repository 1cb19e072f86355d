"""The decode fast paths: the gather kernel and the int-reading kernel against pure-Python references,
and decode / decode_bytes / decode_batch / decode_bytes_batch against tiktoken on every path (short
lists and tuples by one call kernel, arrays by the gather kernel, batches in one kernel call), with the same
errors as the checked path."""

from __future__ import annotations

import copy
import random
import sys
import sysconfig

import numpy as np
import pytest

from tltok_jit.engine import id_decode, pyints
from tltok_jit.encoding import UnknownTokenError
from tltok_jit.kernels.decode import COPY_WORD, decode_call_entry, gather_rows
from tltok_jit.kernels.pyints import read_small_ints

NAME = "o200k_base"


# ----------------------------------------------------------------------------- gather_rows
def gather_reference(ids, row_offsets, by_id):
    """(bytes of the rows, byte offsets, first bad position or -1), in Python."""
    out, offsets = b"", [0]
    rows = [(0, len(ids))] if not len(row_offsets) else list(zip(row_offsets[:-1], row_offsets[1:]))
    for a, e in rows:
        for i in range(a, e):
            t = int(ids[i])
            if not 0 <= t < len(by_id) or by_id[t] is None:
                return b"", None, i
            out += by_id[t]
        offsets.append(len(out))
    return out, offsets, -1


def synthetic_tables(rng: random.Random, n: int):
    """Tokens of 0..40 bytes (0 = unassigned), the longest last so that its copy runs into the end of
    the byte table."""
    by_id = [bytes(rng.randrange(256) for _ in range(rng.choice([1, 2, 3, 5, 8, 15, 16, 17, 31, 40])))
             if rng.random() > 0.1 else None for _ in range(n - 1)]
    by_id.append(bytes(range(40, 80)))
    lengths = [len(b) if b else 0 for b in by_id]
    tok_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=tok_offsets[1:])
    tok_bytes = np.frombuffer(b"".join(b for b in by_id if b), dtype=np.uint8).copy()
    valid = np.array([b is not None for b in by_id])
    for a in (tok_bytes, tok_offsets, valid):
        a.flags.writeable = False
    return by_id, tok_bytes, tok_offsets, valid


@pytest.mark.parametrize("seed", range(6))
def test_gather_rows_matches_the_reference(seed):
    rng = random.Random(seed)
    by_id, tok_bytes, tok_offsets, valid = synthetic_tables(rng, 300)
    good = [i for i, b in enumerate(by_id) if b is not None]
    for _ in range(40):
        ids = [rng.choice(good) for _ in range(rng.randrange(0, 200))]
        if ids and rng.random() < 0.4:  # an unknown id somewhere
            ids[rng.randrange(len(ids))] = rng.choice([-1, -300, 300, 10**6, by_id.index(None)])
        cuts = sorted(rng.randrange(len(ids) + 1) for _ in range(rng.randrange(0, 6)))
        row_offsets = np.array([0, *cuts, len(ids)], dtype=np.int64) if rng.random() < 0.7 else id_decode._ONE_ROW
        arr = np.array(ids, dtype=np.int64)
        arr.flags.writeable = False
        byte_offsets = np.full(len(row_offsets), -7, dtype=np.int64)
        out, bad = gather_rows(arr, row_offsets, tok_bytes, tok_offsets, valid, byte_offsets)
        want, want_offsets, want_bad = gather_reference(ids, row_offsets, by_id)
        assert bad == want_bad
        if want_bad < 0:
            assert out.tobytes() == want
            if len(row_offsets):
                assert byte_offsets.tolist() == want_offsets
        if pyints.available():  # the same ids as a list and a tuple of ints, read from the objects
            handle = id_decode.decode_handle(tok_bytes, tok_offsets, valid)
            small = all(0 <= t < pyints.SMALL_LIMIT for t in ids)
            for seq in (ids, tuple(ids)):
                got = id_decode.gather_list(seq, handle)
                assert got == (want if want_bad < 0 else None) if small else got is None
            # one call, the bytes or the text made by the kernel; a scratch too short: None
            for size in (len(want) + COPY_WORD, len(want) + COPY_WORD - 1, 4096):
                scratch = np.empty(size, dtype=np.uint8)
                call = id_decode.decode_call_handle(handle, scratch)  # both kept alive while used
                fits = want_bad < 0 and len(want) + COPY_WORD <= size
                for seq in (ids, tuple(ids)):
                    assert decode_call_entry()(call.ctypes.data, False, seq) == (want if fits and small else None)
                    assert decode_call_entry()(call.ctypes.data, True, seq) == (
                        want.decode("utf-8", "replace") if fits and small else None)


def test_decode_call_takes_only_exact_lists_and_tuples_of_exact_ints():
    if not pyints.available():
        pytest.skip("layout check failed: the kernel is never called")
    by_id, tok_bytes, tok_offsets, valid = synthetic_tables(random.Random(2), 300)
    good = [i for i, b in enumerate(by_id) if b is not None][:5]
    scratch = np.empty(4096, dtype=np.uint8)
    handle = id_decode.decode_call_handle(id_decode.decode_handle(tok_bytes, tok_offsets, valid), scratch)
    call = handle.ctypes.data
    decode = decode_call_entry()
    want = b"".join(by_id[i] for i in good)
    assert decode(call, False, good) == want and decode(call, False, []) == b""

    class L(list):
        pass

    for other in (L(good), iter(good), np.array(good), range(3), "ab", None, {1: 2}):
        assert decode(call, False, other) is None
    for odd in ODD_ITEMS:
        assert decode(call, False, [good[0], odd]) is None
    assert decode(0, False, good) is None  # the empty slot


def test_decode_handle_refuses_other_arrays():
    by_id, tok_bytes, tok_offsets, valid = synthetic_tables(random.Random(1), 20)
    h = id_decode.decode_handle(tok_bytes, tok_offsets, valid)
    with pytest.raises(ValueError, match="decode call handle"):
        id_decode.decode_call_handle(h, np.empty(64, dtype=np.int8))
    with pytest.raises(ValueError, match="not a handle"):
        id_decode.decode_call_handle(h[:-1], np.empty(64, dtype=np.uint8))
    with pytest.raises(ValueError, match="does not match the decode handle"):
        id_decode.decode_handle(tok_bytes, tok_offsets.astype(np.int32), valid)
    with pytest.raises(ValueError, match="does not match the decode handle"):
        id_decode.decode_handle(tok_bytes, tok_offsets, valid.astype(np.uint8))
    with pytest.raises(ValueError, match="do not match"):
        id_decode.decode_handle(tok_bytes, tok_offsets[:-1], valid)
    with pytest.raises(ValueError, match="do not match"):
        id_decode.decode_handle(tok_bytes[:-1], tok_offsets, valid)


def test_gather_rows_copies_the_last_token_to_the_end():
    rng = random.Random(7)
    by_id, tok_bytes, tok_offsets, valid = synthetic_tables(rng, 50)
    last = len(by_id) - 1
    ids = np.array([last, 0, last] if by_id[0] else [last, last], dtype=np.int64)
    ids.flags.writeable = False
    out, bad = gather_rows(ids, id_decode._ONE_ROW, tok_bytes, tok_offsets, valid, id_decode._ONE_ROW)
    assert bad == -1 and out.tobytes() == b"".join(by_id[int(t)] for t in ids)


# ----------------------------------------------------------------------------- small ints
def small_ints_reference(seq):
    """How many leading items are exact ints in [0, 2**30), and their values."""
    for i, x in enumerate(seq):
        if type(x) is not int or not 0 <= x < pyints.SMALL_LIMIT:
            return i, list(seq[:i])
    return len(seq), list(seq)


def test_layout_check_passes_on_this_interpreter():
    if sys.implementation.name != "cpython" or hasattr(sys, "gettotalrefcount"):
        pytest.skip("the int-reading kernel is for release builds of CPython")
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        pytest.skip("free-threaded build")
    assert pyints.available(), "the layout check refused this CPython: every list decode takes array.array"


class IntSub(int):
    pass


ODD_ITEMS = [True, False, 1.0, 2.5, "3", b"4", None, [5], -1, -(2**40), pyints.SMALL_LIMIT, 2**62, 2**63, 2**80,
             IntSub(5), np.int64(6), np.uint64(7), np.int32(8)]


@pytest.mark.parametrize("seed", range(8))
def test_read_small_ints_matches_the_reference(seed):
    if not pyints.available():
        pytest.skip("layout check failed: the kernel is never called")
    rng = random.Random(seed)
    for _ in range(60):
        seq = [rng.choice([0, 1, 255, 256, 99_999, pyints.SMALL_LIMIT - 1, rng.randrange(pyints.SMALL_LIMIT)])
               for _ in range(rng.randrange(0, 50))]
        if seq and rng.random() < 0.5:
            seq[rng.randrange(len(seq))] = rng.choice(ODD_ITEMS)
        seq = tuple(seq) if rng.random() < 0.4 else seq
        out = np.full(len(seq), -1, dtype=np.int64)
        n = read_small_ints(id(seq), type(seq) is list, len(seq), id(int), pyints.ZERO_TAG, pyints.ONE_DIGIT_TAG, out)
        want_n, want = small_ints_reference(seq)
        assert n == want_n
        assert out[:n].tolist() == want
        arr = pyints.small_int_array(seq)
        if want_n == len(seq):
            assert arr is not None and arr.tolist() == want and arr.dtype == np.int64 and not arr.flags.writeable
        else:
            assert arr is None


def test_small_int_array_takes_only_exact_lists_and_tuples():
    class L(list):
        pass

    assert pyints.small_int_array(L([1, 2])) is None
    assert pyints.small_int_array(range(3)) is None
    if pyints.available():
        assert pyints.small_int_array([]).tolist() == []
        assert pyints.small_int_array((0, 5)).tolist() == [0, 5]


# ----------------------------------------------------------------------------- Encoding decode
@pytest.fixture(scope="module")
def pair(ours, tiktoken_oracle):
    return ours(NAME), tiktoken_oracle(NAME)


@pytest.fixture(scope="module")
def english_ids(pair, shared_path):
    text = shared_path("corpora/english-war-and-peace.txt").read_text(encoding="utf-8")[:400_000]
    ids = pair[1].encode_ordinary(text + " 東京 🙂 ü")
    return ids


def fresh(enc, mode: str):
    """A copy of `enc`: lists and tuples decoded by the call kernel ("held"), or by the gather path
    that answers where it refuses ("gather")."""
    from tltok_jit.engine.core import held_decode_not_ready

    e = copy.copy(enc)
    if mode == "gather":
        e.engine._held_decode_state = ()  # never installed: the engine keeps held_decode_not_ready
        e._held_text = e._held_bytes = held_decode_not_ready
    else:
        e.decode([24912])  # installs the call kernel
        assert e.engine._held_decode_state
    return e


def test_list_decodes_are_one_kernel_call(pair, monkeypatch):
    enc = fresh(pair[0], "held")

    def no_gather(*args):
        raise AssertionError("the gather path was called")

    monkeypatch.setattr(id_decode, "gather_list", no_gather)
    assert enc.decode([24912, 2375]) == "hello world" and enc.decode_bytes((2375, 24912)) == b" worldhello"
    assert enc.decode([24912] * 5000) == "hello" * 5000
    with pytest.raises(AssertionError, match="the gather path was called"):
        enc.decode([24912] * 20_000)  # more bytes than the scratch


MODES = ["held", "gather"]


@pytest.mark.parametrize("mode", MODES)
def test_decode_matches_tiktoken_at_every_length(pair, english_ids, mode):
    enc, oracle = fresh(pair[0], mode), pair[1]
    rng = random.Random(3)
    lengths = [0, 1, 2, 23, 24, 25, 300, 5000, len(english_ids)]
    for n in lengths:
        start = rng.randrange(len(english_ids) - n + 1)
        ids = english_ids[start:start + n]
        want = oracle.decode_bytes(ids)
        assert enc.decode_bytes(ids) == want
        assert enc.decode_bytes(tuple(ids)) == want
        assert enc.decode_bytes(iter(ids)) == want
        for dtype in (np.int64, np.uint32, np.int32, np.uint64):
            assert enc.decode_bytes(np.array(ids, dtype=dtype)) == want
        assert enc.decode_bytes(np.repeat(np.array(ids, dtype=np.int64), 2)[::2]) == want  # strided
        assert enc.decode_bytes([np.int64(i) for i in ids]) == want  # numpy scalars: the array.array path
        for errors in ("replace", "ignore", "surrogateescape"):
            assert enc.decode(ids, errors=errors) == oracle.decode(ids, errors=errors)
    cut = [oracle.encode_single_token(b"\xe6"), 24912] * 3  # a lone lead byte: errors apply
    assert enc.decode(cut) == oracle.decode(cut)
    with pytest.raises(UnicodeDecodeError):
        enc.decode(cut, errors="strict")


@pytest.mark.parametrize("mode", MODES)
def test_batches_match_tiktoken(pair, english_ids, mode):
    enc, oracle = fresh(pair[0], mode), pair[1]
    rng = random.Random(5)
    batch, i = [], 0
    while i < 60_000:
        n = rng.choice([0, 1, 3, 40, 64, 65, 400, 2000])
        batch.append(english_ids[i:i + n])
        i += n
    for b in (batch, tuple(batch), [tuple(r) for r in batch], batch[:1], [], [[]]):
        assert enc.decode_bytes_batch(b) == oracle.decode_bytes_batch(list(b))
        assert enc.decode_batch(b) == oracle.decode_batch(list(b))
    mixed = [np.array(batch[0], dtype=np.uint32), batch[1], iter(batch[2])]
    assert enc.decode_batch(mixed) == [oracle.decode(r) for r in batch[:3]]
    assert enc.decode_batch(r for r in batch[:4]) == oracle.decode_batch(batch[:4])


BAD = [  # (tokens, exception, what the message names; {k}: the position of tokens[k] in the ids)
    ([24912, 2375.0], TypeError, r"tokens\[{1}\] must be an int token id, not float"),
    ([24912.7], TypeError, r"tokens\[{0}\] must be an int token id, not float"),
    (["24912"], TypeError, r"tokens\[{0}\] must be an int token id, not str"),
    ([[1, 2]], TypeError, r"tokens\[{0}\] must be an int token id, not list"),
    ([1, -1], UnknownTokenError, r"Invalid token for decoding: -1 "),
    ([1, 200_019], UnknownTokenError, r"Invalid token for decoding: 200019 "),
    ([1, 2 * 200_019 - 1], UnknownTokenError, r"Invalid token for decoding: 400037 "),
    ([1, -200_019], UnknownTokenError, r"Invalid token for decoding: -200019 "),  # a list index wraps these
    ([-200_018, 1], UnknownTokenError, r"Invalid token for decoding: -200018 "),
    ([1, -1, 24912], UnknownTokenError, r"Invalid token for decoding: -1 "),
    ([1, 2**63], UnknownTokenError, r"Invalid token for decoding: 9223372036854775808 "),
    ([np.uint64(2**63)], UnknownTokenError, r"Invalid token for decoding: 9223372036854775808 "),
    ([1, 2**80], UnknownTokenError, r"Invalid token for decoding: 1208925819614629174706176 "),
]


@pytest.mark.parametrize("repeat", [1, 200], ids=["short", "long"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tokens,exc,message", BAD, ids=[m for _, _, m in BAD])
def test_errors_are_the_checked_path_s(pair, mode, repeat, tokens, exc, message):
    enc, oracle = fresh(pair[0], mode), pair[1]
    ids = [24912] * (repeat - 1) + list(tokens)
    message = message.replace("{0}", str(repeat - 1)).replace("{1}", str(repeat))
    if exc is TypeError:
        with pytest.raises(TypeError):
            oracle.decode(ids)
    for call in (enc.decode, enc.decode_bytes, lambda t: enc.decode_batch([[2375], t]),
                 lambda t: enc.decode_bytes_batch([t]), lambda t: enc.decode_bytes(tuple(t))):
        with pytest.raises(exc, match=message):
            call(ids)


def test_an_unassigned_id_is_named(pair):
    enc = pair[0]
    holes = np.flatnonzero(~enc.engine.valid)
    if not len(holes):
        pytest.skip(f"{NAME} has no unassigned id below n_vocab")
    h = int(holes[0])
    for mode in MODES:
        e = fresh(enc, mode)
        for ids in ([24912, h], [24912] * 300 + [h]):
            with pytest.raises(UnknownTokenError, match=f"{h} .*an unassigned id"):
                e.decode(ids)


@pytest.mark.parametrize("mode", MODES)
def test_skip_special_tokens_drops_them_on_the_fast_paths(pair, mode):
    enc = fresh(pair[0], mode)
    eot = enc.eot_token
    ids = [24912, eot, 2375]
    assert enc.decode(ids) == "hello<|endoftext|> world"
    assert enc.decode(ids, skip_special_tokens=True) == "hello world"
    assert enc.decode_bytes(ids, skip_special_tokens=True) == b"hello world"
    assert enc.decode_batch([ids, ids * 100], skip_special_tokens=True) == ["hello world", "hello world" * 100]
    assert enc.decode_bytes_batch([ids], skip_special_tokens=True) == [b"hello world"]
