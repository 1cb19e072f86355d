"""Streaming decode: text out as token ids come in, never half a character, never re-decoding.

Everything here works on any tokenizer object with `token_byte_table()` returning
`(data: uint8[:], offsets: int64[n_vocab + 1], valid: bool[n_vocab])` (token i's bytes are
data[offsets[i]:offsets[i+1]]; valid[i] is False for unassigned ids), so `Encoding` and
`ByteTokenizer` share one implementation:

* `StreamDecoder(enc)`: `push(id) -> str` emits the longest decodable prefix of what is pending
  (complete characters, and one U+FFFD per maximal ill-formed subpart), holding back an
  incomplete tail that a later token may still complete (`pending`, at most 3 bytes);
  `finish()` flushes it with replacement. Chunks + finish() == decode(ids), always.
* `decode_incremental(enc, new_ids, state)`: the same over a dict state; `state["text"]` is the
  text emitted so far (the deltas joined): decode(all ids so far) without the held-back tail.
* `token_pieces(enc, ids)`: one string per token, "".join(pieces) == decode(ids); a tail still
  incomplete at the end is flushed onto the last token.
* `MultiStreamDecoder(enc, n_streams)`: one new id for each of many streams per `step`, in one
  kernel call (`kernels.stream_decode.step_kernel`).

decode(ids) is `b"".join(token bytes).decode("utf-8", "replace")` (tiktoken's and HF byte-level's).
A tokenizer.json whose decoder is a chain (Mistral-7B: Replace, ByteFallback, Fuse, Strip) decodes
through `decoder_chain`: for such a tokenizer (`enc.decoder_chain()` is not None) every class and
function here runs the chain's `ChainStream`, a bounded window of recent ids, so its text is
decode's too; a byte-fallback run is held back while its bytes are well-formed UTF-8 so far, until a
non-byte token ends it (`pending` holds its bytes, which may be more than 3). Once a byte of it is
ill-formed, its text (one U+FFFD per byte) is emitted, and each later byte's U+FFFD as it comes.
Per id the work is O(1) amortized at any run length.

How: one stream at a time is Python-call-bound, so `StreamDecoder` returns a precomputed str for a
token that is complete UTF-8 when nothing is pending, and otherwise runs CPython's C UTF-8 decoder
(`codecs.utf_8_decode(..., final=False)`) over pending + token bytes, correcting its one
divergence (it waits on ED A0..BF, which can never complete). The batched form runs
`kernels.stream_decode.step_kernel`, a byte-level state machine over Unicode Table 3-7; the tests
check the two against each other and against decode on random id sequences. Per token the work is
O(token length + 3): no prefix is ever decoded again.
"""

from __future__ import annotations

import operator
import weakref
from codecs import utf_8_decode as _utf8_decode

import numpy as np

from ..engine.args import check_int, token_id_array
from ..hf.decoder_chain import ChainStream
from ..errors import UnknownTokenError
from ..kernels import stream_decode as _k

__all__ = [
    "StreamDecoder",
    "MultiStreamDecoder",
    "decode_incremental",
    "token_pieces",
    "token_tables",
    "incomplete_tail_start",
]

_FFFD = "\ufffd"


# --------------------------------------------------------------------------- tables, cached per encoding


class TokenTables:
    """The validated byte table of one tokenizer, plus lazily built per-token views of it.

    `complete[t]`: token t is well-formed UTF-8 by itself; `token_bytes[t]`: its bytes (None when
    unassigned); `token_strs[t]`: its text when complete, else None.
    """

    __slots__ = ("data", "offsets", "valid", "n_vocab", "max_token_len", "name", "chain", "_token_bytes",
                 "_token_strs", "_valid_flags", "_complete", "_packed", "__weakref__")

    def __init__(self, data, offsets, valid, n_vocab=None, name=None, chain=None):
        data = np.ascontiguousarray(data)
        offsets = np.ascontiguousarray(offsets)
        valid = np.ascontiguousarray(valid)
        if data.dtype != np.uint8 or data.ndim != 1:
            raise ValueError(f"token_byte_table: data must be a 1-d uint8 array, got {data.dtype} {data.shape}")
        if offsets.ndim != 1 or offsets.dtype.kind not in "iu":
            raise ValueError(f"token_byte_table: offsets must be a 1-d integer array, got {offsets.dtype}")
        offsets = offsets.astype(np.int64, copy=False)
        if valid.ndim != 1:
            raise ValueError("token_byte_table: valid must be a 1-d array")
        valid = valid.astype(np.bool_, copy=False)
        nv = valid.shape[0]
        if n_vocab is not None and int(n_vocab) != nv:
            raise ValueError(f"token_byte_table: valid has {nv} entries but n_vocab is {n_vocab}")
        if offsets.shape[0] != nv + 1:
            raise ValueError(f"token_byte_table: offsets has {offsets.shape[0]} entries, expected n_vocab + 1 = {nv + 1}")
        if nv and (offsets[0] < 0 or offsets[-1] > data.shape[0] or np.any(np.diff(offsets) < 0)) \
                or data.shape[0] >= 1 << 60:
            raise ValueError("token_byte_table: offsets must be non-decreasing within [0, len(data)]")
        self.data, self.offsets, self.valid, self.n_vocab = data, offsets, valid, nv
        lens = np.diff(offsets)
        self.max_token_len = int(lens[valid].max()) if nv and valid.any() else 0
        self.name = name
        self.chain = chain  # a DecoderChain when decode is not the token bytes joined
        self._valid_flags = None
        self._token_bytes = None
        self._token_strs = None
        self._complete = None
        self._packed = None

    @property
    def packed(self) -> np.ndarray:
        """The kernel's one-int64-per-token table (`kernels.stream_decode.pack_table`)."""
        p = self._packed
        if p is None:
            p = self._packed = _k.pack_table(self.offsets, self.valid, self.complete)
        return p

    @property
    def valid_flags(self) -> bytes:
        """`valid` as bytes (1 = assigned): indexed by a Python int far faster than the array."""
        v = self._valid_flags
        if v is None:
            v = self._valid_flags = self.valid.astype(np.uint8).tobytes()
        return v

    @property
    def complete(self) -> np.ndarray:
        c = self._complete
        if c is None:
            c = self._complete = _k.complete_table(self.data, self.offsets, self.valid)
        return c

    @property
    def token_strs(self) -> list:
        ts = self._token_strs
        if ts is None:
            tb = self.token_bytes
            ts = [None] * self.n_vocab
            for i in np.flatnonzero(self.complete).tolist():
                ts[i] = tb[i].decode("utf-8")
            self._token_strs = ts
        return ts

    @property
    def token_bytes(self) -> list:
        """token id -> bytes (None for unassigned ids)."""
        tb = self._token_bytes
        if tb is None:
            raw = self.data.tobytes()
            offs = self.offsets.tolist()
            tb = [raw[a:b] for a, b in zip(offs[:-1], offs[1:])]
            for i in np.flatnonzero(~self.valid).tolist():
                tb[i] = None
            self._token_bytes = tb
        return tb

    def bad_id(self, token_id) -> UnknownTokenError:
        what = "is an unassigned id" if 0 <= token_id < self.n_vocab else "is out of range"
        of = f" of {self.name!r}" if self.name else ""
        return UnknownTokenError(f"token id {token_id} {what} (vocabulary size {self.n_vocab}{of})")


_CACHE: dict = {}  # id(enc) -> (weakref to enc, TokenTables); entries leave with their encoding


def token_tables(enc) -> TokenTables:
    """The (cached) validated byte table of `enc` (anything with `token_byte_table()`)."""
    hit = _CACHE.get(id(enc))
    if hit is not None and hit[0]() is enc:
        return hit[1]
    if isinstance(enc, TokenTables):
        return enc
    if not callable(getattr(enc, "token_byte_table", None)):
        raise TypeError(f"a stream decoder takes an Encoding (or anything with token_byte_table()), not a "
                        f"{type(enc).__name__}; a registry-kind tokenizer streams with its "
                        "decode_incremental(new_ids, state)")
    data, offsets, valid = enc.token_byte_table()
    name = getattr(enc, "name", None)
    chain_of = getattr(enc, "decoder_chain", None)
    t = TokenTables(data, offsets, valid, getattr(enc, "n_vocab", None), name if isinstance(name, str) else None,
                    chain_of() if callable(chain_of) else None)
    key = id(enc)
    try:
        ref = weakref.ref(enc, lambda _r, key=key: _CACHE.get(key, (None,))[0] is _r and _CACHE.pop(key, None))
    except TypeError:  # not weak-referenceable: no cache
        return t
    _CACHE[key] = (ref, t)
    return t


def _checked_ids(tables: TokenTables, ids) -> list:
    """`ids` as a list of ints, each in the vocabulary and assigned."""
    if type(ids) in (list, tuple) and len(ids) <= 64:  # the streaming case: a few ids, no numpy
        flags = tables.valid_flags
        n = tables.n_vocab
        for i in ids:
            if type(i) is not int or not 0 <= i < n or not flags[i]:
                break  # the array path below names the problem
        else:
            return list(ids)
    if not isinstance(ids, np.ndarray):
        ids = _as_id_array(ids, tables)
    elif ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise TypeError(f"token ids must be a 1-d integer array, got {ids.dtype} {ids.shape}")
    if ids.size == 0:
        return []
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0:
        raise tables.bad_id(lo)
    if hi >= tables.n_vocab:
        raise tables.bad_id(hi)
    ok = tables.valid[ids]
    if not ok.all():
        raise tables.bad_id(int(ids[np.argmin(ok)]))
    return ids.tolist()


def _gather(tables: TokenTables, ids) -> bytes:
    """The joined bytes of `ids`, each validated first."""
    if isinstance(ids, np.ndarray):
        ids = _checked_ids(tables, ids)
    else:
        ids = _as_id_array(ids, tables).tolist()
        if ids:
            lo, hi = min(ids), max(ids)
            if lo < 0:
                raise tables.bad_id(operator.index(lo))
            if hi >= tables.n_vocab:
                raise tables.bad_id(operator.index(hi))
    parts = list(map(tables.token_bytes.__getitem__, ids))
    try:
        return b"".join(parts)
    except TypeError:  # a None: unassigned
        for i, b in zip(ids, parts):
            if b is None:
                raise tables.bad_id(operator.index(i)) from None
        raise


# --------------------------------------------------------------------------- the incomplete tail


def _cont_ok(lead: int, k: int, b: int) -> bool:
    if k == 1:
        if lead == 0xE0:
            return 0xA0 <= b <= 0xBF
        if lead == 0xED:
            return 0x80 <= b <= 0x9F
        if lead == 0xF0:
            return 0x90 <= b <= 0xBF
        if lead == 0xF4:
            return 0x80 <= b <= 0x8F
    return 0x80 <= b <= 0xBF


def incomplete_tail_start(buf: bytes) -> int:
    """Where the incomplete-but-completable tail of `buf` starts (len(buf) if there is none).

    The tail is a lead byte followed by fewer continuation bytes than it needs, each allowed at
    its place (Unicode Table 3-7). A lead byte is never a continuation, so decoding splits there:
    decode(buf) == decode(buf[:cut]) + decode(buf[cut:]), and the tail alone decodes to one U+FFFD.
    """
    n = len(buf)
    for j in range(1, min(3, n) + 1):
        p = n - j
        b0 = buf[p]
        if 0x80 <= b0 <= 0xBF:
            continue  # a continuation: look further back for its lead
        if 0xC2 <= b0 <= 0xDF:
            need = 2
        elif 0xE0 <= b0 <= 0xEF:
            need = 3
        elif 0xF0 <= b0 <= 0xF4:
            need = 4
        else:
            return n
        if j >= need:
            return n  # complete (or followed by too many continuations): nothing to hold
        for k in range(1, j):
            if not _cont_ok(b0, k, buf[p + k]):
                return n
        return p
    return n


# --------------------------------------------------------------------------- one stream


class StreamDecoder:
    """Decode one token at a time: `push(id)` returns the text that is now certain."""

    __slots__ = ("_tables", "_tb", "_ts", "_n", "_pending")

    def __new__(cls, enc):
        chained = cls is StreamDecoder and token_tables(enc).chain is not None
        return object.__new__(_ChainStreamDecoder if chained else cls)

    def __init__(self, enc):
        t = self._tables = token_tables(enc)
        self._tb = t.token_bytes
        self._ts = t.token_strs
        self._n = t.n_vocab
        self._pending = b""

    def push(self, token_id) -> str:
        """Feed one token; returns "" while a character is still incomplete."""
        if type(token_id) is not int:
            token_id = check_int(token_id, "token_id")
        if not 0 <= token_id < self._n:
            raise self._tables.bad_id(operator.index(token_id))
        if not self._pending:
            s = self._ts[token_id]  # complete token, nothing pending: its own text
            if s is not None:
                return s
            b = self._tb[token_id]
            if b is None:
                raise self._tables.bad_id(operator.index(token_id))
        else:
            b = self._tb[token_id]
            if b is None:
                raise self._tables.bad_id(operator.index(token_id))
            b = self._pending + b
        s, used = _utf8_decode(b, "replace", False)
        if used < len(b):
            return s + self._hold(b[used:])
        self._pending = b""
        return s

    def _hold(self, tail: bytes) -> str:
        # CPython's incremental decoder also waits on ED A0..BF, which can never complete (it would be
        # a surrogate): those are two maximal subparts now. Every other tail it keeps can complete.
        if len(tail) == 2 and tail[0] == 0xED and tail[1] >= 0xA0:
            self._pending = b""
            return _FFFD + _FFFD
        self._pending = tail
        return ""

    def push_many(self, ids) -> str:
        """Feed several tokens; the concatenation of what `push` would have returned for each."""
        b = self._pending + _gather(self._tables, ids)
        s, used = _utf8_decode(b, "replace", False)
        if used < len(b):
            return s + self._hold(b[used:])
        self._pending = b""
        return s

    @property
    def pending(self) -> bytes:
        """The bytes of an unfinished character (at most 3)."""
        return self._pending

    def finish(self) -> str:
        """Flush what is pending (one U+FFFD if anything is) and start over."""
        s = _utf8_decode(self._pending, "replace", True)[0] if self._pending else ""
        self._pending = b""
        return s

    def reset(self) -> None:
        self._pending = b""


class _ChainStreamDecoder(StreamDecoder):
    """StreamDecoder of a tokenizer whose decode is a decoder chain (see the module docstring)."""

    __slots__ = ("_stream",)

    def __init__(self, enc):
        t = self._tables = token_tables(enc)
        self._n = t.n_vocab
        self._stream = ChainStream(t.chain)

    def push(self, token_id) -> str:
        if type(token_id) is not int:
            token_id = check_int(token_id, "token_id")
        if not 0 <= token_id < self._n or not self._tables.valid[token_id]:
            raise self._tables.bad_id(operator.index(token_id))
        return self._stream.push((token_id,))

    def push_many(self, ids) -> str:
        return self._stream.push(_checked_ids(self._tables, ids))

    @property
    def pending(self) -> bytes:
        """The bytes of a byte-fallback run not yet ended by another token (any length)."""
        return self._stream.pending

    def finish(self) -> str:
        s = self._stream.push((), final=True)
        self._stream.reset()
        return s

    def reset(self) -> None:
        self._stream.reset()


# --------------------------------------------------------------------------- state-dict and per-token forms


def decode_incremental(enc, new_ids, state: dict, *, final: bool = False) -> str:
    """Decode `new_ids` after the ids already folded into `state`; returns the new text.

    `state` starts as an empty dict. After every call `state["text"]` is the text emitted so far
    (the deltas joined): decode(all ids so far) except a trailing incomplete character, which is
    held back until a later call completes it (or `final=True` flushes it as U+FFFD), so the
    deltas never carry a U+FFFD that the finished text will not have. The cost is
    O(len(new_ids)) at any length: the prefix is never decoded again and `state["text"]` is
    extended in place. Keys other than "text" are private.
    """
    tables = token_tables(enc)
    if tables.chain is not None:
        return _chain_incremental(tables, new_ids, state, final)
    buf = _gather(tables, new_ids)
    pending = state.get("_pending")
    if pending:
        buf = pending + buf
    delta, used = _utf8_decode(buf, "replace", final)
    tail = buf[used:] if used < len(buf) else b""
    if len(tail) == 2 and tail[0] == 0xED and tail[1] >= 0xA0:  # see StreamDecoder._hold
        delta += _FFFD + _FFFD
        tail = b""
    state["_pending"] = tail
    _append_text(state, delta)
    return delta


def _append_text(state: dict, delta: str) -> None:
    """state["text"] += delta, in place: popped first, the string has no other reference, so
    CPython's `+=` extends it instead of copying the transcript."""
    text = state.pop("text", "")
    text += delta
    state["text"] = text


def _chain_incremental(tables: TokenTables, new_ids, state: dict, final: bool) -> str:
    stream = state.get("_chain")
    if stream is None or stream.chain is not tables.chain:
        stream = state["_chain"] = ChainStream(tables.chain)
    delta = stream.push(_checked_ids(tables, new_ids), final)
    _append_text(state, delta)
    return delta


def token_pieces(enc, ids) -> list:
    """One string per token: what the token completes. "".join(pieces) == decode(ids).

    A token that ends inside a character contributes "" and the token completing it carries the
    character; an incomplete tail left at the end is flushed (as U+FFFD) onto the last token.
    One kernel call for the whole sequence.
    """
    tables = token_tables(enc)
    if tables.chain is not None:
        stream = ChainStream(tables.chain)
        push = stream.push
        pieces = [push((i,)) for i in _checked_ids(tables, ids)]
        if pieces:
            pieces[-1] += stream.push((), final=True)
        return pieces
    ids = _as_id_array(ids, tables)
    m = ids.shape[0]
    if m == 0:
        return []
    pend = np.zeros((1, 4), np.uint8)
    pcount = np.zeros(1, np.int64)
    bufs = _Buffers(3 * (4 * m + 3) + m, m + 1)  # grown by the kernel's request for long tokens
    pieces = _run_kernel(tables, ids, np.zeros(m, np.int64), pend, pcount, bufs, _SEP)
    if pcount[0]:
        pieces[-1] += _FFFD
    return pieces


def _as_id_array(ids, tables: TokenTables) -> np.ndarray:
    """`ids` as an int64 array (values are validated by the kernel, or here when they overflow int64)."""
    return token_id_array(ids, tables.bad_id, "ids")


_SEP = 0xFF          # never part of well-formed UTF-8: the kernel ends every entry's text with it
_SEP_STR = "\udcff"  # ... and "surrogateescape" decodes it to this lone surrogate, to split on


class _Buffers:
    __slots__ = ("out", "out_off")

    def __init__(self, n_bytes, n_slots):
        self.out = np.empty(n_bytes, np.uint8)
        self.out_off = np.empty(n_slots, np.int64)


_NO_MASK = np.zeros(0, np.bool_)


def _run_kernel(tables, ids, streams, pend, pcount, bufs, sep, mode=_k.AUTO, active=_NO_MASK):
    """One step_kernel call (repeated only when it asked for larger buffers, before changing anything).

    With sep == _SEP returns the list of decoded entries; with sep == -1 (mode ALL) the byte count."""
    for _ in range(4):
        status, value, n_slow = _k.step_kernel(ids, streams, active, tables.data, tables.packed, pend, pcount,
                                               bufs.out, bufs.out_off, sep, mode)
        if status == _k.OK:
            break
        if status == _k.BAD_ID:
            raise tables.bad_id(int(ids[value]))
        if status == _k.BAD_STREAM:
            raise IndexError(f"stream index {int(streams[value])} out of range (n_streams {pend.shape[0]})")
        if status == _k.NEED_BYTES:
            bufs.out = np.empty(max(value, 2 * bufs.out.shape[0]), np.uint8)
        elif status == _k.NEED_SLOTS:
            bufs.out_off = np.empty(max(value, 2 * bufs.out_off.shape[0]), np.int64)
        else:  # BAD_MASK / BAD_MODE: callers never ask for these
            raise AssertionError(f"step_kernel status {status}")
    else:  # pragma: no cover - the kernel asked for more than it was given, repeatedly
        raise RuntimeError("step_kernel: output buffers could not be sized")
    if sep < 0:
        return value
    parts = bufs.out[:value].tobytes().decode("utf-8", "surrogateescape").split(_SEP_STR)
    parts.pop()  # after the last separator
    if n_slow < 0:  # mode ALL: every entry is in `parts`
        return parts
    # mode SLOW_ONLY: fast-path entries are their token's own text; `parts` are the others, in order
    res = list(map(tables.token_strs.__getitem__, ids.tolist()))
    if n_slow:
        for j, piece in zip(bufs.out_off[:n_slow].tolist(), parts):
            res[j] = piece
    return res


# --------------------------------------------------------------------------- many streams


class MultiStreamDecoder:
    """`n_streams` independent StreamDecoders whose state lives in numpy arrays.

    `step(ids)` feeds ids[i] to stream i (or, with `streams`, ids[j] to stream streams[j], in
    order) in ONE kernel call and returns the text deltas; `step_masked(ids, mask)` feeds only
    the streams whose mask is set; `step_bytes` returns the UTF-8 bytes + offsets instead of strs.
    Per stream: `pending(i)`, `finish(i)`, `reset(i)`. State: `pending_bytes` (n_streams x 4
    uint8, the first `pending_count[i]` bytes of row i) and `pending_count` (0..3).
    Chunks of a stream + finish(i) == decode(its ids), exactly as with StreamDecoder.
    Not thread-safe: one caller at a time (the kernel itself releases the GIL).
    """

    def __new__(cls, enc, n_streams: int):
        chained = cls is MultiStreamDecoder and token_tables(enc).chain is not None
        return object.__new__(_ChainMultiStreamDecoder if chained else cls)

    def __init__(self, enc, n_streams: int):
        n_streams = operator.index(n_streams)
        if n_streams < 1:
            raise ValueError(f"n_streams must be >= 1, got {n_streams}")
        self._tables = token_tables(enc)
        self._tables.packed  # build the kernel's tables now, not in the first step
        self._tables.token_strs
        self._mode = _k.AUTO
        self.n_streams = n_streams
        self._pend = np.zeros((n_streams, 4), np.uint8)
        self._pcount = np.zeros(n_streams, np.int64)
        self._all = np.arange(n_streams, dtype=np.int64)
        self._empty = [""] * n_streams
        self._bufs = _Buffers(n_streams * (3 * (self._tables.max_token_len + 3) + 1) + 16, n_streams + 1)

    @property
    def pending_bytes(self) -> np.ndarray:
        """Read-only view: row i's first pending_count[i] bytes are stream i's pending bytes."""
        v = self._pend.view()
        v.flags.writeable = False
        return v

    @property
    def pending_count(self) -> np.ndarray:
        v = self._pcount.view()
        v.flags.writeable = False
        return v

    def _stream(self, i) -> int:
        i = operator.index(i)
        if not 0 <= i < self.n_streams:
            raise IndexError(f"stream index {i} out of range (n_streams {self.n_streams})")
        return i

    def _ids_streams(self, ids, streams):
        ids = _as_id_array(ids, self._tables)
        if streams is None:
            if ids.shape[0] != self.n_streams:
                raise ValueError(f"step: expected {self.n_streams} ids (one per stream), got {ids.shape[0]}")
            return ids, self._all
        streams = _as_stream_array(streams)
        if streams.shape[0] != ids.shape[0]:
            raise ValueError(f"step: {ids.shape[0]} ids but {streams.shape[0]} stream indices")
        return ids, streams

    def step(self, ids, streams=None) -> list:
        """Feed ids[i] to stream i (ids of length n_streams), or ids[j] to streams[j] in order.

        Returns one text delta per id ("" while a stream's character is incomplete)."""
        ids, streams = self._ids_streams(ids, streams)
        return _run_kernel(self._tables, ids, streams, self._pend, self._pcount, self._bufs, _SEP, self._mode)

    def step_bytes(self, ids, streams=None) -> tuple:
        """As `step`, but returns (utf8: bytes, offsets: int64[len(ids) + 1]); delta j is
        utf8[offsets[j]:offsets[j+1]] (always well-formed UTF-8)."""
        ids, streams = self._ids_streams(ids, streams)
        n = _run_kernel(self._tables, ids, streams, self._pend, self._pcount, self._bufs, -1, _k.ALL)
        return self._bufs.out[:n].tobytes(), self._bufs.out_off[: ids.shape[0] + 1].copy()

    def step_masked(self, ids, mask) -> list:
        """Feed ids[i] to stream i where mask[i] (other ids are not read); n_streams deltas, "" where not fed."""
        ids = _as_id_array(ids, self._tables)
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"step_masked: mask must be a boolean array, got {mask.dtype}")
        if ids.shape[0] != self.n_streams or mask.shape != (self.n_streams,):
            raise ValueError(f"step_masked: ids and mask must both have n_streams = {self.n_streams} entries")
        return _run_kernel(self._tables, ids, self._all, self._pend, self._pcount, self._bufs, _SEP, _k.ALL,
                           np.ascontiguousarray(mask))

    def pending(self, i) -> bytes:
        i = self._stream(i)
        return self._pend[i, : self._pcount[i]].tobytes()

    def finish(self, i) -> str:
        """Flush stream i (one U+FFFD if bytes are pending: they are a valid but unfinished prefix) and reset it."""
        i = self._stream(i)
        had = self._pcount[i] != 0
        self._pcount[i] = 0
        return _FFFD if had else ""

    def finish_all(self) -> list:
        res = [_FFFD if k else "" for k in self._pcount.tolist()]
        self._pcount[:] = 0
        return res

    def reset(self, i=None) -> None:
        """Drop the pending bytes of stream i (of every stream if i is None)."""
        if i is None:
            self._pcount[:] = 0
        else:
            self._pcount[self._stream(i)] = 0


class _ChainMultiStreamDecoder(MultiStreamDecoder):
    """MultiStreamDecoder of a tokenizer whose decode is a decoder chain: one ChainStream per stream,
    stepped in Python. `pending_bytes` is n_streams x max(4, longest pending run)."""

    def __init__(self, enc, n_streams: int):
        n_streams = operator.index(n_streams)
        if n_streams < 1:
            raise ValueError(f"n_streams must be >= 1, got {n_streams}")
        self._tables = token_tables(enc)
        self.n_streams = n_streams
        self._streams = [ChainStream(self._tables.chain) for _ in range(n_streams)]
        self._all = np.arange(n_streams, dtype=np.int64)

    @property
    def pending_bytes(self) -> np.ndarray:
        runs = [s.pending for s in self._streams]
        out = np.zeros((self.n_streams, max(4, *map(len, runs))), np.uint8)
        for i, r in enumerate(runs):
            out[i, :len(r)] = np.frombuffer(r, np.uint8)
        out.flags.writeable = False
        return out

    @property
    def pending_count(self) -> np.ndarray:
        out = np.array([len(s.pending) for s in self._streams], np.int64)
        out.flags.writeable = False
        return out

    def _check(self, ids, streams):
        ids, streams = self._ids_streams(ids, streams)
        ids = _checked_ids(self._tables, ids)
        streams = streams.tolist()
        for j in streams:
            if not 0 <= j < self.n_streams:
                raise IndexError(f"stream index {j} out of range (n_streams {self.n_streams})")
        return ids, streams

    def step(self, ids, streams=None) -> list:
        ids, streams = self._check(ids, streams)
        ss = self._streams
        return [ss[j].push((i,)) for i, j in zip(ids, streams)]

    def step_bytes(self, ids, streams=None) -> tuple:
        parts = [d.encode("utf-8") for d in self.step(ids, streams)]
        offsets = np.zeros(len(parts) + 1, np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        return b"".join(parts), offsets

    def step_masked(self, ids, mask) -> list:
        ids = _as_id_array(ids, self._tables)
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"step_masked: mask must be a boolean array, got {mask.dtype}")
        if ids.shape[0] != self.n_streams or mask.shape != (self.n_streams,):
            raise ValueError(f"step_masked: ids and mask must both have n_streams = {self.n_streams} entries")
        fed = np.flatnonzero(mask)
        out = [""] * self.n_streams
        for j, d in zip(fed.tolist(), self.step(ids[fed], fed)):
            out[j] = d
        return out

    def pending(self, i) -> bytes:
        return self._streams[self._stream(i)].pending

    def finish(self, i) -> str:
        s = self._streams[self._stream(i)]
        text = s.push((), final=True)
        s.reset()
        return text

    def finish_all(self) -> list:
        return [self.finish(i) for i in range(self.n_streams)]

    def reset(self, i=None) -> None:
        for s in self._streams if i is None else [self._streams[self._stream(i)]]:
            s.reset()


def _as_stream_array(streams) -> np.ndarray:
    if isinstance(streams, np.ndarray):
        if streams.ndim != 1 or streams.dtype.kind not in "iu":
            raise TypeError(f"stream indices must be a 1-d integer array, got {streams.dtype} {streams.shape}")
        if streams.dtype == np.uint64 and streams.size and int(streams.max()) > np.iinfo(np.int64).max:
            raise IndexError(f"stream index {int(streams.max())} out of range")
        return streams.astype(np.int64, copy=False)
    try:
        return np.array([operator.index(s) for s in streams], dtype=np.int64)
    except OverflowError:
        raise IndexError("stream index out of range") from None
