"""The decode fast paths: the gather kernel and the int-reading kernel against pure-Python references,
and decode / decode_bytes / decode_batch / decode_bytes_batch against tiktoken on every path (short
lists joined, long lists and arrays through the kernel, batches in one kernel call), with the same
errors as the checked path."""

from __future__ import annotations

import copy
import random
import sys
import sysconfig

import numpy as np
import pytest

from tltok_jit import id_decode, pyints
from tltok_jit.encoding import UnknownTokenError
from tltok_jit.kernels.decode import gather_rows
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


def test_decode_handle_refuses_other_arrays():
    by_id, tok_bytes, tok_offsets, valid = synthetic_tables(random.Random(1), 20)
    id_decode.decode_handle(tok_bytes, tok_offsets, valid)
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


def full_table(enc, oracle) -> list:
    """Every id's bytes (None: unassigned), from tiktoken."""
    return [oracle.decode_single_token_bytes(i) if enc._valid[i] else None for i in range(enc.n_vocab)]


@pytest.fixture(scope="module")
def reference_table(pair):
    return full_table(*pair)


def fresh(enc, table=None):
    """A copy of `enc` (its own decode state): short lists go through the kernel and are learnt
    (no table), or are joined over `table`."""
    e = copy.copy(enc)
    assert e._join_table is None
    if table is not None:
        e._join_table = list(table)
    return e


def test_short_decodes_learn_their_ids(pair, monkeypatch):
    enc = fresh(pair[0])
    assert enc.decode_bytes([24912, 2375]) == b"hello world"
    table = enc._join_table
    assert len(table) == enc.n_vocab and table[24912] == b"hello" and table[2375] == b" world"
    assert sum(b is not None for b in table) == 2

    def no_kernel(*args):
        raise AssertionError("the kernel was called")

    monkeypatch.setattr(id_decode, "gather_list", no_kernel)
    assert enc.decode([2375, 24912, 2375]) == " worldhello world"  # joined: learnt ids only
    assert enc.decode_bytes([2375, 24912]) == b" worldhello"
    with pytest.raises(AssertionError, match="the kernel was called"):
        enc.decode([24912, 9999])  # an id not learnt yet


def test_learnt_ids_are_tiktoken_s_bytes(pair, english_ids, reference_table):
    enc = fresh(pair[0])
    for i in range(0, 20_000, 7):
        enc.decode(english_ids[i:i + 7])
    learnt = [i for i, b in enumerate(enc._join_table) if b is not None]
    assert len(learnt) > 1000
    assert all(enc._join_table[i] == reference_table[i] for i in learnt)


def test_many_misses_build_the_whole_table(pair, reference_table, monkeypatch):
    import tltok_jit.encoding as encoding_module

    monkeypatch.setattr(encoding_module, "_JOIN_MISSES_BEFORE_WHOLE_TABLE", 3)
    enc = fresh(pair[0])
    for ids in ([24912], [2375], [24912, 2375]):  # the third is joined: no miss
        enc.decode(ids)
    assert sum(b is not None for b in enc._join_table) == 2
    assert enc.decode([300]) == pair[1].decode([300])  # the third miss
    assert enc._join_table == reference_table
    table = id_decode.id_bytes_table(enc._t.tok_bytes, enc._t.tok_offsets, enc._valid)
    assert table == reference_table


MODES = ["learning", "joined"]


@pytest.mark.parametrize("mode", MODES)
def test_decode_matches_tiktoken_at_every_length(pair, english_ids, reference_table, mode):
    enc, oracle = fresh(pair[0], reference_table if mode == "joined" else None), pair[1]
    rng = random.Random(3)
    lengths = [0, 1, 2, id_decode.SHORT_IDS - 1, id_decode.SHORT_IDS, id_decode.SHORT_IDS + 1, 300, 5000,
               len(english_ids)]
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
def test_batches_match_tiktoken(pair, english_ids, reference_table, mode):
    enc, oracle = fresh(pair[0], reference_table if mode == "joined" else None), pair[1]
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
def test_errors_are_the_checked_path_s(pair, reference_table, mode, repeat, tokens, exc, message):
    enc, oracle = fresh(pair[0], reference_table if mode == "joined" else None), pair[1]
    ids = [24912] * (repeat - 1) + list(tokens)
    message = message.replace("{0}", str(repeat - 1)).replace("{1}", str(repeat))
    if exc is TypeError:
        with pytest.raises(TypeError):
            oracle.decode(ids)
    for call in (enc.decode, enc.decode_bytes, lambda t: enc.decode_batch([[2375], t]),
                 lambda t: enc.decode_bytes_batch([t]), lambda t: enc.decode_bytes(tuple(t))):
        with pytest.raises(exc, match=message):
            call(ids)


def test_an_unassigned_id_is_named(pair, reference_table):
    enc = pair[0]
    holes = np.flatnonzero(~enc._valid)
    if not len(holes):
        pytest.skip(f"{NAME} has no unassigned id below n_vocab")
    h = int(holes[0])
    for table in (None, reference_table):
        e = fresh(enc, table)
        for ids in ([24912, h], [24912] * 300 + [h]):
            with pytest.raises(UnknownTokenError, match=f"{h} .*an unassigned id"):
                e.decode(ids)


@pytest.mark.parametrize("mode", MODES)
def test_skip_special_tokens_drops_them_on_the_fast_paths(pair, reference_table, mode):
    enc = fresh(pair[0], reference_table if mode == "joined" else None)
    eot = enc.eot_token
    ids = [24912, eot, 2375]
    assert enc.decode(ids) == "hello<|endoftext|> world"
    assert enc.decode(ids, skip_special_tokens=True) == "hello world"
    assert enc.decode_bytes(ids, skip_special_tokens=True) == b"hello world"
    assert enc.decode_batch([ids, ids * 100], skip_special_tokens=True) == ["hello world", "hello world" * 100]
    assert enc.decode_bytes_batch([ids], skip_special_tokens=True) == [b"hello world"]
