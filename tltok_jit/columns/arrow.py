"""Arrow columns in, Arrow columns out: `encode_arrow`, `count_arrow`, `decode_arrow`.

The functions here take the `Encoding` as their first argument and run the numba kernels directly:
they are exact for every model whose whole pipeline is in the kernels (tiktoken encodings, and
tokenizer.json models without a Python-side normalizer/pretokenizer). Call `Encoding.encode_arrow`,
`count_arrow`, `decode_arrow` (thin wrappers) in application code: they route the other Hugging Face
models through their Python runtime. pyarrow is imported when this module is (the package itself
does not import it).

Input
-----
`string`, `large_string`, `binary`, `large_binary` are read in place: the offsets, data and validity
buffers become read-only numpy views (no copy, int32 or int64 offsets as stored, the validity bitmap
read bit by bit inside the kernel). `string_view` / `binary_view` are read in place too: the 16-byte
views and the variadic data buffers are handed to the kernels (a row is either inline in its view or
a slice of one data buffer). `dictionary<..., string-like>` encodes the dictionary once and takes.
A `ChunkedArray` is processed chunk by chunk and returned chunked the same way; a sliced array (non-zero
offset) is read through its offset. A polars Series (its Arrow C stream: string_view, zero-copy), a
pandas Series backed by Arrow (`ArrowDtype`, `string[pyarrow]`), anything with `__arrow_c_stream__` /
`__arrow_c_array__`, and plain Python lists are accepted (`Encoding.encode_arrow` / `count_arrow`
return a pandas Series for a pandas Series: `tltok_jit.columns.pandas_io`).

A null row stays null (its offsets may point at bytes: they are never read).

Invalid UTF-8 (binary columns, or string columns written by a careless producer): every row is
validated inside the encoding kernel (standard UTF-8: no overlongs, surrogates or code points above
U+10FFFF). With `errors="replace"` (the default) a row with invalid bytes is encoded exactly as
`row.decode("utf-8", "replace")` would be by `Encoding.encode` (each maximal ill-formed subsequence
becomes U+FFFD); with `errors="strict"` a `ValueError` names the row and the byte offset.

Output
------
`list<uint32>` built from numpy buffers with `pa.Array.from_buffers` (the ids array becomes the values
buffer without a copy), or `large_list<uint32>` when the flat ids of one array exceed 2**31 - 1 (for a
ChunkedArray: when any chunk does, all chunks are large_list). `large_list=True/False` forces a type.

Parallelism
-----------
An array is cut into byte-balanced blocks (about 8 per thread, at least 16 KB each). Workers take
blocks from a shared atomic counter (dynamic scheduling: a block of slow Chinese next to fast English
does not leave a core idle). A block that starts inside a long row continues that row from a proven
piece boundary (`find_cut`, see its docstring for the proof), so one 200 MB document is encoded on all
cores, and a 900 KB row next to 10,000 short ones is split too. Each row (part) writes its ids into
the output region of its own bytes (n bytes never give more than n ids); a serial pass then packs
them. The result is the same for any thread count and any block size. The piece caches and merge
work buffers are the Encoding's own (reused across calls); the per-call arrays are allocated once.

Special tokens follow `Encoding.encode`: `allowed_special` become their ids, any other special token
found in a row raises ValueError (the message names the row) unless `disallowed_special` excludes it.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np
import pyarrow as pa
from numba.typed import List as TypedList

from ..errors import ArrowRowError, UnknownTokenError, raise_disallowed_special_token
from ..kernels import columns as KC
from ..kernels import columns_decode as KD
from ..kernels.column_cuts import all_cuts
from ..kernels.columns import LAYOUT_OFFSETS, LAYOUT_VIEWS
from ..engine.pages import id_buffer, small_pages
from ..engine.special_policy import SpecialPolicy
from ..tables.bpe import pattern_kind
from ..engine.text import read_only_view
from ..engine.threads import PARALLEL_LOCK, balanced_bounds, on_threads, resolve_threads, workers_for

__all__ = [
    "ArrowRowError",
    "as_arrow",
    "count_arrow",
    "decode_arrow",
    "encode_arrow",
    "find_cuts",
    "is_text_type",
]

# A list<uint32> array holds at most this many ids (int32 offsets); tests lower it to exercise the switch.
LIST_MAX_IDS = 2**31 - 1
MIN_BLOCK_BYTES = 16 * 1024  # below this a block is not worth a scheduling step
GATHER_BYTES = 1 << 18  # of ids, per thread that gathers them (_gather)
BLOCKS_PER_THREAD = 8
MAX_BLOCKS = 1 << 14
MIN_PARALLEL_BYTES = 48 * 1024  # smaller inputs are encoded on the calling thread
DENSE_KEEP = 1 << 24  # ids per worker row of _State.dense_rows kept between calls (64 MB of address space)
COUNT_SCRATCH = 1 << 16  # per-worker id scratch of count_arrow (spans are cut to fit when provably safe)


# ------------------------------------------------------------------------------------------------
# input adaptation
# ------------------------------------------------------------------------------------------------

_TEXT_PREDICATES = ("is_string", "is_large_string", "is_binary", "is_large_binary", "is_string_view",
                    "is_binary_view")


def is_text_type(t: pa.DataType) -> bool:
    """True for the Arrow types encode_arrow reads (string-like, binary-like, dictionaries of them, null)."""
    if pa.types.is_dictionary(t):
        return is_text_type(t.value_type)
    if pa.types.is_null(t):
        return True
    return any(getattr(pa.types, p, lambda _t: False)(t) for p in _TEXT_PREDICATES)


def as_arrow(obj) -> pa.Array | pa.ChunkedArray:
    """An Arrow array for `obj` without copying where the source allows it."""
    if isinstance(obj, (pa.Array, pa.ChunkedArray)):
        return obj
    mod = type(obj).__module__.partition(".")[0]
    if mod == "pandas":
        arr = getattr(obj, "array", obj)
        if hasattr(arr, "__arrow_array__"):
            return arr.__arrow_array__()
        return pa.array(np.asarray(obj, dtype=object), from_pandas=True)
    if hasattr(obj, "__arrow_c_stream__"):
        return pa.chunked_array(obj)
    if hasattr(obj, "__arrow_c_array__"):
        return pa.array(obj)
    if isinstance(obj, np.ndarray):
        return pa.array(obj.tolist() if obj.dtype == object else obj)
    if isinstance(obj, (list, tuple)):
        return pa.array(obj)
    if hasattr(obj, "to_arrow"):
        return obj.to_arrow()
    raise TypeError(f"cannot read {type(obj).__name__} as an Arrow array")


def _view(buf: pa.Buffer | None, dtype, offset_items: int, count: int) -> np.ndarray:
    if count == 0 or buf is None:
        a = np.zeros(max(count, 1), dtype=dtype)[:count]
        a.flags.writeable = False
        return a
    return np.frombuffer(buf, dtype=dtype, count=count, offset=offset_items * np.dtype(dtype).itemsize)


def check_offsets(off: np.ndarray, size: int, what: str) -> None:
    """Refuse offsets a kernel would follow out of the buffer: Arrow requires them non-decreasing and
    within the data (`arr.validate(full=True)` checks the same, and UTF-8 as well, much slower)."""
    if len(off) < 2:
        return
    if off[0] < 0 or off[-1] > size:
        raise ValueError(f"invalid Arrow {what} array: its offsets run from {int(off[0])} to {int(off[-1])}, "
                         f"outside its data buffer of {size} items")
    down = off[1:] < off[:-1]
    if down.any():
        r = int(np.argmax(down))
        raise ValueError(f"invalid Arrow {what} array: offsets decrease at row {r} ({int(off[r])} then "
                         f"{int(off[r + 1])}); Arrow requires non-decreasing offsets")


def _check_views(views: np.ndarray, lens: np.ndarray, bufs: list, what: str) -> None:
    """Each out-of-line string view (length > 12) must lie inside the data buffer it names."""
    if (lens < 0).any():
        raise ValueError(f"invalid Arrow {what} array: row {int(np.argmax(lens < 0))} has a negative length")
    far = np.flatnonzero(lens > 12)
    if not len(far):
        return
    index = views[4 * far + 2].astype(np.int64)
    start = views[4 * far + 3].astype(np.uint32).astype(np.int64)
    sizes = np.array([b.size if b is not None else 0 for b in bufs] or [0], dtype=np.int64)
    bad = (index < 0) | (index >= len(bufs))
    if not bad.any():
        bad = start + lens[far] > sizes[index]
    if bad.any():
        r = int(far[np.argmax(bad)])
        raise ValueError(f"invalid Arrow {what} array: the view of row {r} points outside its data buffers")


_EMPTY_U8 = np.zeros(1, dtype=np.uint8)
_EMPTY_U8.flags.writeable = False
_EMPTY_I32 = np.zeros(4, dtype=np.int32)
_EMPTY_I32.flags.writeable = False


class _Source:
    """The numpy views of one text array that the kernels read."""

    __slots__ = ("n", "layout", "bufs", "views", "off", "vbits", "voff", "has_nulls", "array")

    def __init__(self, arr: pa.Array):
        self._read(arr)
        # one argument type per layout for the kernels: int64 offsets and read-only arrays (string,
        # large_string and view arrays compiled three variants of every column kernel before)
        self.off = read_only_view(self.off.astype(np.int64, copy=False))
        self.views = read_only_view(self.views)

    def _read(self, arr: pa.Array) -> None:
        t = arr.type
        n = len(arr)
        self.n = n
        self.array = arr
        bufs = arr.buffers()
        self.has_nulls = arr.null_count > 0
        if self.has_nulls and bufs[0] is not None:
            self.vbits = read_only_view(np.frombuffer(bufs[0], dtype=np.uint8))  # one kernel variant
            self.voff = int(arr.offset)
        elif self.has_nulls:  # null type: no bitmap, every row null
            self.vbits = np.zeros((n + 7) // 8 + 1, dtype=np.uint8)
            self.vbits.flags.writeable = False
            self.voff = 0
        else:
            self.vbits = _EMPTY_U8
            self.voff = 0
            self.has_nulls = False
        if pa.types.is_null(t):
            self.layout = LAYOUT_OFFSETS
            self.off = _view(None, np.int64, 0, n + 1) if n == 0 else np.zeros(n + 1, dtype=np.int64)
            self.off.flags.writeable = False
            self.views = _EMPTY_I32
            self.bufs = _typed([_EMPTY_U8])
            return
        view_types = [p for p in ("is_string_view", "is_binary_view") if hasattr(pa.types, p)]
        if any(getattr(pa.types, p)(t) for p in view_types):
            self.layout = LAYOUT_VIEWS
            views_u8 = _view(bufs[1], np.uint8, 16 * arr.offset, 16 * n)
            views = views_u8.view(np.int32) if n else _EMPTY_I32
            lens = np.asarray(views[0::4], dtype=np.int64) if n else np.zeros(0, dtype=np.int64)
            if self.has_nulls:  # a null view may hold anything: give it length 0
                valid = np.unpackbits(self.vbits, bitorder="little")[self.voff:self.voff + n].astype(bool)
                lens = np.where(valid, lens, 0)
            _check_views(views, lens, bufs[2:], str(t))
            off = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(lens, out=off[1:])
            off.flags.writeable = False
            self.off = off
            self.views = views
            data = [_view(b, np.uint8, 0, b.size) if b is not None else _EMPTY_U8 for b in bufs[2:]]
            self.bufs = _typed([views_u8 if n else _EMPTY_U8] + data)
            return
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        odt = np.int64 if large else np.int32
        self.layout = LAYOUT_OFFSETS
        self.off = _view(bufs[1], odt, arr.offset, n + 1)
        if n == 0:
            self.off = np.zeros(1, dtype=odt)
            self.off.flags.writeable = False
        data = bufs[2]
        check_offsets(self.off, data.size if data is not None else 0, str(t))
        self.bufs = _typed([np.frombuffer(data, dtype=np.uint8) if data is not None and data.size else _EMPTY_U8])
        self.views = _EMPTY_I32

    def row_bytes(self, r: int) -> bytes:
        o0, o1 = int(self.off[r]), int(self.off[r + 1])
        if self.layout == LAYOUT_OFFSETS:
            return self.bufs[0][o0:o1].tobytes()
        ln = int(self.views[4 * r])
        if ln <= 12:
            return self.bufs[0][16 * r + 4:16 * r + 4 + ln].tobytes()
        bi = 1 + int(self.views[4 * r + 2])
        st = int(np.uint32(self.views[4 * r + 3]))
        return self.bufs[bi][st:st + (o1 - o0)].tobytes()

    def validity_buffer(self) -> tuple[pa.Buffer | None, int]:
        """(bitmap with bit offset 0, null count) for an output array of the same rows."""
        arr = self.array
        if arr.null_count == 0:
            return None, 0
        bm = arr.buffers()[0]
        if bm is None:  # null type
            return pa.py_buffer(np.zeros((self.n + 7) // 8, dtype=np.uint8)), self.n
        if arr.offset % 8 == 0:
            return bm.slice(arr.offset // 8, (self.n + 7) // 8), arr.null_count
        bits = np.unpackbits(np.frombuffer(bm, dtype=np.uint8), bitorder="little")[arr.offset:arr.offset + self.n]
        return pa.py_buffer(np.packbits(bits, bitorder="little")), arr.null_count

    def valid_mask(self) -> np.ndarray:
        if not self.has_nulls:
            return np.ones(self.n, dtype=bool)
        return np.unpackbits(self.vbits, bitorder="little")[self.voff:self.voff + self.n].astype(bool)


def validate_text_array(arr: pa.Array) -> None:
    """ValueError when the offsets or views of a string/binary array (or of a dictionary's values)
    point outside its buffers; for readers that convert rows with pyarrow, which trusts them."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary
    if is_text_type(arr.type):
        _Source(arr)


def _typed(arrays: list[np.ndarray]):
    """The kernels' typed list of a column's data buffers (read-only views). One buffer, the common
    case, by a kernel (columns.one_buffer): made in Python the list took 0.17-0.22 ms in a call after
    a long kernel run, 0.04-0.07 so."""
    arrays = [read_only_view(a) for a in arrays]
    if len(arrays) == 1:
        return KC.one_buffer(arrays[0])
    lst = TypedList()
    for a in arrays:
        lst.append(a)
    return lst


# ------------------------------------------------------------------------------------------------
# per-encoding state
# ------------------------------------------------------------------------------------------------

class _State:
    def __init__(self, enc):
        added = [t.content.encode("utf-8") for t in enc.compiled.added]
        n = max(len(added), 1)
        self.tok_nl_inner = np.zeros(n, dtype=bool)  # '\n' before the token's last byte
        self.tok_sp_inner = np.zeros(n, dtype=bool)  # ' ' after the token's first byte
        for i, c in enumerate(added):
            self.tok_nl_inner[i] = b"\n" in c[:-1]
            self.tok_sp_inner[i] = b" " in c[1:]
        self.splittable = pattern_kind(enc.tables).column_cuts
        self.counter = np.zeros(1, dtype=np.int64)
        self.local = threading.local()
        self.scratch = np.zeros((1, COUNT_SCRATCH), dtype=np.uint32)
        self.dense = None  # the parallel calls' dense_rows
        self.last_plan = None
        self.last_worker_bytes = None
        self.tabs: dict = {}

    def byte_table(self, check_dis: bool, T) -> np.ndarray:
        """uint8[256] for the validation pass: bit 1 = non-ASCII, bit 2 = first byte of an added token
        (set only when disallowed tokens are checked)."""
        tab = self.tabs.get(check_dis)
        if tab is None:
            tab = np.zeros(256, dtype=np.uint8)
            tab[0x80:] = 1
            if check_dis:
                tab[np.asarray(T.trie_root) >= 0] |= 2
            tab.flags.writeable = False
            self.tabs[check_dis] = tab
        return tab

    def serial_scratch(self) -> np.ndarray:
        s = getattr(self.local, "scratch", None)
        if s is None:
            s = self.local.scratch = np.zeros((1, COUNT_SCRATCH), dtype=np.uint32)
        return s

    def dense_rows(self, workers: int, cap: int) -> np.ndarray:
        """uint32[workers, >= cap]: the rows the workers of a parallel call (under PARALLEL_LOCK)
        write their ids to (KC.ColumnJob.out). Pages are committed as ids are written; rows of up to
        DENSE_KEEP ids are kept for the next call (no page faults on a second call of that size)."""
        held = self.dense
        if held is not None and held.shape[0] >= workers and held.shape[1] >= cap:
            return held
        rows = small_pages(np.empty((workers, cap), dtype=np.uint32))
        if cap <= DENSE_KEEP:
            self.dense = rows
        return rows

    def parallel_scratch(self, workers: int) -> np.ndarray:
        if self.scratch.shape[0] < workers:
            self.scratch = np.zeros((workers, COUNT_SCRATCH), dtype=np.uint32)
        return self.scratch

    def rules(self, masks) -> tuple[bool, bool]:
        """(newline rule, space rule) usable with these added-token masks (allowed | disallowed)."""
        if not self.splittable:
            return False, False
        nl = sp = True
        for m in masks:
            if m is None:
                continue
            if (m & self.tok_nl_inner[: len(m)]).any():
                nl = False
            if (m & self.tok_sp_inner[: len(m)]).any():
                sp = False
        return nl, sp


_STATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_STATES_LOCK = threading.Lock()


def _state(enc) -> _State:
    enc = enc.engine  # per engine (an Encoding gives its own)
    st = _STATES.get(enc)
    if st is None:
        with _STATES_LOCK:
            st = _STATES.get(enc)
            if st is None:
                st = _STATES[enc] = _State(enc)
    return st


# ------------------------------------------------------------------------------------------------
# the core: one array
# ------------------------------------------------------------------------------------------------

def find_cuts(enc, text: str | bytes, *, rule_nl: bool = True, rule_sp: bool = True) -> list[int]:
    """Every byte position of `text` (UTF-8) where encode_arrow may cut a long row.

    A position i (0 < i < len) is a cut when, with T the row's bytes,

      rule SP:  T[i] == ' ' and the character ending at i is a letter (\\p{L}: Lu Ll Lt Lm Lo);
      rule NL:  T[i-1] == '\\n', i >= 2, the character ending at i-1 (before the newline) is not
                whitespace (\\s), the character at i is not whitespace and T[i] != '/'.

    Claim: then pieces(T) == pieces(T[:i]) + pieces(T[i:]) for the three tiktoken split patterns
    (r50k/p50k/gpt2, cl100k, o200k; every pattern kind with a hand-written scanner), so the ids are
    ids(T[:i]) + ids(T[i:]) (BPE never crosses a piece).

    Proof. Let T' = T[:i]. Regex matching from a position p reads forward only (no lookbehind), so the
    matches from p >= i are the same in T and in T[i:] (`$` is the end of T in both). It remains to
    show that for every p < i the engine computes the same match at p in T and in T': then the
    pieces of T' (which tile [0, i)) are exactly T's pieces before i, i is a piece boundary of T, and
    the rest follows. Matching at p in T and in T' can only differ where the engine reads position i
    (a character in T, the end in T'): a class element or literal that would take T[i] (and cannot
    take the end), `$` (true at the end only) or `(?!\\S)` (true at the end, false before a
    non-space). The engine reads position i only after consuming T[i-1] in the current attempt.

    Rule SP (T[i-1] a letter L, T[i] = ' '). The elements that can consume a letter are: gpt2
    `\\p{L}++` and the contraction literals `'(?:[sdmt]|ll|ve|re)`; cl100k `\\p{L}++` and
    `'(?i:...)` (the prefix `[^\\r\\n\\p{L}\\p{N}]` excludes letters); o200k the runs
    `[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*` `[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+` (and the `+`/`*` twins) and the
    contraction suffix literals. Whitespace alternatives, `\\p{N}` and the `[^\\s\\p{L}\\p{N}]` runs and
    their `[\\r\\n]` / `[\\r\\n/]` tails cannot consume a letter. After consuming L at i-1, the next
    element reading i is one of those runs (a space is in none of their classes: the run stops, as
    it does at the end of T') or the next character of a contraction literal (a letter or `'`; a
    space fails, as the end does) or the end of the alternative. Backtracking only revisits
    positions < i, where T and T' agree. So every decision is the same.

    Rule NL (T[i-1] = '\\n', the character before it non-space, T[i] non-space and not '/'). The
    elements that can consume '\\n' are: the whitespace alternatives (all three patterns), cl100k's
    `[\\r\\n]*+` tail and o200k's `[\\r\\n/]*` tail (prefix classes `[^\\r\\n...]` and the other classes
    exclude it). (a) In a tail: the tail is the last element of its alternative; at i it meets
    T[i], which is not CR, LF or '/', and stops, as at the end of T'. (b) A whitespace alternative
    that consumes '\\n' consumed only whitespace from its start p, so p = i-1 (the character before
    the newline is not a space). At p = i-1 the non-whitespace alternatives fail on '\\n' itself
    without reading i. gpt2: in T', `\\s++$` matches "\\n"; in T it fails at i, `\\s+(?!\\S)` fails
    (one character, then T[i] is not a space) and `\\s` matches "\\n": the same piece [i-1, i).
    cl100k: in T', `\\s++$` matches "\\n"; in T, `\\s*[\\r\\n]` matches "\\n" (greedy `\\s*` takes it,
    `[\\r\\n]` fails on T[i], backtrack). o200k: `\\s*[\\r\\n]+` comes first and matches exactly
    "\\n" in both (T[i] is neither whitespace nor CR/LF). For p < i-1 no alternative reaches i except
    through a tail (case a). So every decision is the same.

    Added tokens: a cut is not used when an allowed or disallowed added token could contain it (NL is
    disabled if one has '\\n' before its last byte, SP if one has ' ' after its first byte), so the
    leftmost-longest token matches of T are those of T[:i] followed by those of T[i:]; a cut next
    to a token is at a segment end, which is trivially safe. Malformed UTF-8 decodes as one-byte OTHER
    characters everywhere (and the character before i is decoded the same way; see `_class_before`).
    CRLF line ends are deliberately not cuts (gpt2 splits "\\r\\n" before a word but not at the end).
    """
    enc = enc.engine  # an Encoding or its engine (engine.core.Engine)
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    buf = np.frombuffer(data, dtype=np.uint8) if data else _EMPTY_U8
    st = _state(enc)
    if not st.splittable:
        return []
    return all_cuts(buf, 0, len(data), enc.tables.stage1, enc.tables.stage2, rule_nl, rule_sp).tolist()


class _Result:
    __slots__ = ("ids", "offsets", "counts", "src")

    def __init__(self, ids, offsets, counts, src):
        self.ids = ids
        self.offsets = offsets
        self.counts = counts
        self.src = src


def _encode_source(enc, src: _Source, *, threads: int, policy: SpecialPolicy, counting: bool,
                   errors: str, row_base: int, block_bytes: int | None, large_list) -> _Result:
    """Encode (or count) one array's rows. Returns ids + offsets (or per-row counts). A policy's
    refused strings that are no added tokens (policy.finder) are the caller's to check."""
    n = src.n
    T = enc.tables
    st = _state(enc)
    amask, any_allowed = policy.allowed, policy.any_allowed
    check_dis = policy.disallowed is not None
    dmask_arr = policy.disallowed if check_dis else enc.no_added
    off = src.off
    total = int(off[n]) - int(off[0]) if n else 0
    threads = max(1, threads)
    if total < MIN_PARALLEL_BYTES or n == 0:
        threads = 1
    if block_bytes is None:
        if threads == 1:
            target = max(total, 1)
        else:
            target = max(MIN_BLOCK_BYTES, -(-total // (threads * BLOCKS_PER_THREAD)))
    else:
        target = max(1, int(block_bytes))
    max_blocks = min(MAX_BLOCKS, max(1, -(-total // target)) + 1)
    rule_nl, rule_sp = st.rules((amask if any_allowed else None, dmask_arr if check_dis else None))
    if max_blocks > 1 and n:
        bb = KC.plan_blocks(src.layout, src.bufs, src.views, off, n, src.vbits, src.voff, src.has_nulls, target,
                   max_blocks, T.stage1, T.stage2, rule_nl, rule_sp)
    else:
        bb = np.array([int(off[0]) if n else 0, int(off[n]) if n else 0], dtype=np.int64)
    nb = len(bb) - 1
    st.last_plan = bb  # for tests and diagnostics: the block boundaries of the last call
    rstart = np.searchsorted(off, bb, side="left").astype(np.int64)
    rstart[0] = 0
    rstart[-1] = n
    bpos = np.zeros((nb, 2), dtype=np.int64)
    counts = np.empty(max(n, 1), dtype=np.int64)
    heads = np.zeros(nb, dtype=np.int64)
    flags = np.zeros(max(n, 1), dtype=np.uint8)
    hits = np.full((nb, 3), -1, dtype=np.int64)
    tab = st.byte_table(check_dis, T)

    def job(work, scratch, wout) -> KC.ColumnJob:
        return KC.ColumnJob(layout=src.layout, views=src.views, off=off, vbits=src.vbits, voff=src.voff,
                            has_nulls=src.has_nulls, bb=bb, rstart=rstart, amask=amask, any_allowed=any_allowed,
                            dmask=dmask_arr, tab=tab, counting=counting, out=wout, bpos=bpos, counts=counts,
                            heads=heads, flags=flags, hits=hits, vals=work, scratch=scratch, rule_nl=rule_nl,
                            rule_sp=rule_sp)

    gathered = None  # (ids, row offsets), taken from the workers' rows before another call may reuse them
    row_cap = 1 if counting else total + 1
    if n == 0:
        pass
    elif threads == 1 or nb == 1:
        cache, work = enc.serial_workspace()
        # one worker writes the blocks in order: its row becomes the result, packed in place
        row = id_buffer(row_cap)
        wout = row.reshape(1, row_cap)
        KC.drive(0, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), src.bufs, T, cache,
                 job(work, st.serial_scratch(), wout), True)
        if not counting and hits[:, 0].max() < 0:
            gathered = _gather(wout, bpos, bb, rstart, n, counts, heads, flags, large_list, into=row)
        del wout  # a view of row, which _gather resized
    else:
        workers = min(threads, nb)
        with PARALLEL_LOCK:
            cache, work = enc.parallel_workspace(workers)
            scratch = st.parallel_scratch(workers)
            wout = st.dense_rows(workers, row_cap)
            st.counter[0] = 0
            wbytes = np.zeros(workers, dtype=np.int64)
            the_job = job(work, scratch, wout)
            on_threads(workers, lambda w: KC.drive(w, st.counter, wbytes, src.bufs, T, cache, the_job, False))
            st.last_worker_bytes = wbytes  # diagnostics: bytes each worker took from the block queue
            if not counting and hits[:, 0].max() < 0:
                gathered = _gather(wout, bpos, bb, rstart, n, counts, heads, flags, large_list, threads=workers)

    hit_rows = np.flatnonzero(hits[:, 0] >= 0)
    first_hit = int(hits[hit_rows[0], 0]) if len(hit_rows) else n
    bad_rows = np.flatnonzero(flags[:n])
    rep = None
    if len(bad_rows):
        if errors == "strict":
            r = int(bad_rows[0])
            if r < first_hit:
                data = src.row_bytes(r)
                pos = KD.utf8_error_at(np.frombuffer(data, dtype=np.uint8), 0, len(data))
                raise ArrowRowError(f"row {row_base + r}: invalid UTF-8 at byte {pos} "
                                    f"({data[max(pos - 8, 0):pos + 8]!r}); pass errors='replace' to encode "
                                    f"it as bytes.decode('utf-8', 'replace') would", row_base + r)
        elif errors != "replace":
            raise ValueError(f"errors must be 'replace' or 'strict', not {errors!r}")
        bad_rows = bad_rows[bad_rows < first_hit]
        if len(bad_rows):
            fixed = [src.row_bytes(int(r)).decode("utf-8", "replace").encode("utf-8") for r in bad_rows]
            rep_src = _Source(pa.array(fixed, type=pa.large_binary()))
            try:
                rep = _encode_source(enc, rep_src, threads=threads, policy=policy, counting=counting,
                                     errors="strict", row_base=0, block_bytes=None, large_list=True)
            except ArrowRowError as e:
                r = int(bad_rows[e.row])
                raise ArrowRowError(str(e).replace(f"row {e.row}:", f"row {row_base + r}:", 1), row_base + r) \
                    from None
    if len(hit_rows):
        k = int(hit_rows[0])
        r, t = int(hits[k, 0]), int(hits[k, 2])
        try:
            raise_disallowed_special_token(enc.compiled.added[t].content)
        except ValueError as e:
            raise ArrowRowError(f"row {row_base + r}: {e}", row_base + r) from None

    if counting:
        tot = KC.row_totals(counts, heads, rstart, flags, n)[:n] if n else np.zeros(0, dtype=np.int64)
        if rep is not None:
            tot[bad_rows] = rep.counts
        return _Result(None, None, tot, src)

    if gathered is None:  # no rows
        ids = np.empty(0, dtype=np.uint32)
        new_off = np.zeros(n + 1, dtype=np.int64 if _want_large(0, large_list) else np.int32)
    else:
        ids, new_off = gathered
    n_ids = len(ids)
    if rep is not None:
        add = int(rep.offsets[-1])
        total_ids = n_ids + add
        use_large = _want_large(total_ids, large_list)
        ids2 = np.empty(max(total_ids, 1), dtype=np.uint32)
        off2 = np.empty(n + 1, dtype=np.int64 if use_large else np.int32)
        KC.splice(ids, new_off, bad_rows.astype(np.int64), rep.ids, rep.offsets, ids2, off2)
        ids, new_off = ids2[:total_ids], off2
    return _Result(ids, new_off, None, src)


def _gather(wout, bpos, bb, rstart, n, counts, heads, flags, large_list, into=None,
            threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(ids, row offsets) of an encode call from the workers' rows (KC.gather), into a new array on
    up to `threads` threads (each a run of blocks) or, for one worker, `into` (its row, packed in
    place: every move goes left)."""
    nb = len(bb) - 1
    starts = KC.block_starts(bpos, bb, rstart, counts, heads, flags)
    n_ids = int(starts[nb])
    new_off = np.empty(n + 1, dtype=np.int64 if _want_large(n_ids, large_list) else np.int32)
    if into is not None:
        KC.gather(wout, bpos, bb, rstart, n, counts, heads, flags, into, new_off, True, 0, nb, 0)
        into.resize(max(n_ids, 1), refcheck=False)  # shrinks in place; untouched pages were never committed
        return into[:n_ids], new_off
    # not from Arrow's default pool (mimalloc): its first allocation after a call's buffers were
    # freed stalled for 5-60 ms in 4 of 6 fresh processes on a VM (156 KB of ids, 3.7 ms call)
    ids = small_pages(np.empty(max(n_ids, 1), dtype=np.uint32))
    # runs of blocks on several threads: the first write to each fresh page faults (~1-2 us a
    # page; 2.4 MB of ids took 1.1-2.2 ms on one thread); below GATHER_BYTES a thread's start costs
    # more than its share of the copy
    parts = max(1, min(threads, 4 * n_ids // GATHER_BYTES)) if nb > 1 else 1
    cut = [0] + [int(np.searchsorted(starts, p * n_ids // parts, side="right")) - 1 for p in range(1, parts)] + [nb]
    on_threads(parts, lambda w: KC.gather(wout, bpos, bb, rstart, n, counts, heads, flags, ids, new_off, False,
                                          cut[w], cut[w + 1], int(starts[cut[w]])))
    return ids, new_off


def _want_large(n_ids: int, large_list) -> bool:
    if large_list is None:
        return n_ids > LIST_MAX_IDS
    if not large_list and n_ids > LIST_MAX_IDS:
        raise OverflowError(f"{n_ids} ids do not fit a list<uint32> array (int32 offsets); pass large_list=True "
                            "or None")
    return bool(large_list)


def _list_array(res: _Result, large: bool) -> pa.Array:
    src = res.src
    n = src.n
    offsets = res.offsets
    if large and offsets.dtype != np.int64:
        offsets = offsets.astype(np.int64)
    n_ids = int(offsets[-1]) if n else 0
    values = pa.Array.from_buffers(pa.uint32(), n_ids, [None, pa.py_buffer(res.ids)])
    validity, null_count = src.validity_buffer()
    typ = pa.large_list(pa.uint32()) if large else pa.list_(pa.uint32())
    return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(offsets)], null_count=null_count,
                                 children=[values])


def _count_array(res: _Result) -> pa.Array:
    validity, null_count = res.src.validity_buffer()
    return pa.Array.from_buffers(pa.int64(), res.src.n, [validity, pa.py_buffer(res.counts)], null_count=null_count)


# ------------------------------------------------------------------------------------------------
# public functions
# ------------------------------------------------------------------------------------------------

def _chunks(arr) -> tuple[list[pa.Array], bool]:
    arr = as_arrow(arr)
    if isinstance(arr, pa.ChunkedArray):
        return list(arr.chunks), True
    return [arr], False


def _check_type(t: pa.DataType) -> None:
    if not is_text_type(t):
        raise TypeError(f"encode_arrow reads string, large_string, string_view, binary, large_binary, "
                        f"binary_view or dictionary arrays of them; got {t}")


def _python_disallowed(enc, chunk: pa.Array, pattern, row_base: int) -> None:
    """tiktoken's check for disallowed strings that are not special tokens (a regex over the text)."""
    for r, v in enumerate(chunk.to_pylist()):
        if v is None:
            continue
        text = v if isinstance(v, str) else bytes(v).decode("utf-8", "replace")
        m = pattern.search(text)
        if m is not None:
            try:
                raise_disallowed_special_token(m.group())
            except ValueError as e:
                raise ArrowRowError(f"row {row_base + r}: {e}", row_base + r) from None


def _run(enc, array, *, num_threads, allowed_special, disallowed_special, counting, errors, block_bytes,
         large_list):
    if errors not in ("replace", "strict"):
        raise ValueError(f"errors must be 'replace' or 'strict', not {errors!r}")
    arr = as_arrow(array)
    chunks, chunked = _chunks(arr)
    _check_type(arr.type)
    policy = enc.special_policy(allowed_special, disallowed_special)
    threads = resolve_threads(num_threads)
    results = []
    row_base = 0
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type):
            results.append(("dict", chunk, _run(enc, chunk.dictionary, num_threads=num_threads,
                                                allowed_special=allowed_special,
                                                disallowed_special=disallowed_special, counting=counting,
                                                errors=errors, block_bytes=block_bytes, large_list=large_list)))
            row_base += len(chunk)
            continue
        if policy.finder is not None:
            _python_disallowed(enc, chunk, policy.finder, row_base)
        src = _Source(chunk)
        results.append(("res", chunk, _encode_source(enc, src, threads=threads, policy=policy, counting=counting,
                                                     errors=errors, row_base=row_base, block_bytes=block_bytes,
                                                     large_list=large_list)))
        row_base += len(chunk)
    return _assemble(results, chunked, counting, large_list)


def _assemble(results, chunked: bool, counting: bool, large_list):
    if counting:
        out = []
        for kind, chunk, r in results:
            if kind == "dict":
                out.append(r.take(chunk.indices))
            else:
                out.append(_count_array(r))
        return pa.chunked_array(out, type=pa.int64()) if chunked else out[0]
    if large_list is None:
        large = any(pa.types.is_large_list(r.type) if kind == "dict" else r.offsets.dtype == np.int64
                    for kind, _c, r in results)
    else:
        large = bool(large_list)
    out = []
    for kind, chunk, r in results:
        if kind == "dict":
            arr = r.take(chunk.indices)
            if large and not pa.types.is_large_list(arr.type):
                arr = arr.cast(pa.large_list(pa.uint32()))
            out.append(arr)
        else:
            out.append(_list_array(r, large))
    typ = pa.large_list(pa.uint32()) if large else pa.list_(pa.uint32())
    return pa.chunked_array(out, type=typ) if chunked else out[0]


def encode_arrow(enc, array, *, num_threads: int = 0, allowed_special=frozenset(), disallowed_special="all",
                 errors: str = "replace", large_list: bool | None = None,
                 block_bytes: int | None = None) -> pa.Array | pa.ChunkedArray:
    """Token ids of every row of a string/binary column: `list<uint32>` (or `large_list<uint32>`).

    num_threads: 0 = every core numba may use; the ids do not depend on it.
    allowed_special / disallowed_special: as `Encoding.encode` (the error names the row).
    errors: "replace" (invalid UTF-8 is encoded as `bytes.decode("utf-8", "replace")`) or "strict".
    large_list: None = large_list only when the ids exceed 2**31 - 1; True / False force the type.
    block_bytes: the parallel block size (testing; default ~total / (8 * threads), >= 16 KB).
    """
    enc = enc.engine  # an Encoding or its engine (engine.core.Engine)
    return _run(enc, array, num_threads=num_threads, allowed_special=allowed_special,
                disallowed_special=disallowed_special, counting=False, errors=errors, block_bytes=block_bytes,
                large_list=large_list)


def count_arrow(enc, array, *, num_threads: int = 0, allowed_special=frozenset(), disallowed_special="all",
                errors: str = "replace", block_bytes: int | None = None) -> pa.Array | pa.ChunkedArray:
    """The number of ids of every row (`int64`, nulls stay null), without materializing the ids."""
    enc = enc.engine  # an Encoding or its engine (engine.core.Engine)
    return _run(enc, array, num_threads=num_threads, allowed_special=allowed_special,
                disallowed_special=disallowed_special, counting=True, errors=errors, block_bytes=block_bytes,
                large_list=None)


# ---- decode ------------------------------------------------------------------------------------

def _decode_one(enc, arr: pa.Array, errors: str, row_base: int, threads: int) -> pa.Array:
    t = arr.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or
            (hasattr(pa.types, "is_fixed_size_list") and pa.types.is_fixed_size_list(t))):
        raise TypeError(f"decode_arrow reads list<integer> arrays; got {t}")
    if not pa.types.is_integer(t.value_type):
        raise TypeError(f"decode_arrow reads lists of integer token ids; got {t}")
    if pa.types.is_fixed_size_list(t):
        arr = arr.cast(pa.large_list(t.value_type))
        t = arr.type
    n = len(arr)
    bufs = arr.buffers()
    odt = np.int64 if pa.types.is_large_list(t) else np.int32
    loff = _view(bufs[1], odt, arr.offset, n + 1) if n else np.zeros(1, dtype=odt)
    child = arr.values
    if child.null_count:
        raise ValueError("decode_arrow: a list holds a null token id")
    check_offsets(loff, len(child), str(t))
    idt = child.type.to_pandas_dtype()
    ids = _view(child.buffers()[1], idt, child.offset, len(child))
    if ids.dtype not in (np.uint32, np.int64, np.int32):
        ids = ids.astype(np.int64)
    has_nulls = arr.null_count > 0
    vbits = read_only_view(np.frombuffer(bufs[0], dtype=np.uint8)) if has_nulls else _EMPTY_U8
    voff = int(arr.offset) if has_nulls else 0
    tbytes, toffs, valid = enc.tables.tok_bytes, enc.tables.tok_offsets, enc.compiled.valid
    lens = np.empty(max(n, 1), dtype=np.int64)
    bad = np.empty(max(n, 1), dtype=np.int64)
    # contiguous row ranges of about equal ids, one per worker
    workers = workers_for(min(threads, max(n, 1)), 4 * (int(loff[n]) - int(loff[0])) if n else 0)
    rb = balanced_bounds(loff, workers)
    if n:
        on_threads(workers, lambda w: KD.decode_lengths(ids, loff, int(rb[w]), int(rb[w + 1]), vbits, voff,
                                                        has_nulls, toffs, valid, lens, bad))
    bad_rows = np.flatnonzero(bad[:n] >= 0)
    if len(bad_rows):
        r = int(bad_rows[0])
        i = int(ids[int(loff[r]) + int(bad[r])])
        raise UnknownTokenError(f"row {row_base + r}: invalid token for decoding: {i} "
                                f"(not in the vocabulary of {enc.name!r}, n_vocab={enc.n_vocab})")
    out_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens[:n], out=out_off[1:])
    total = int(out_off[-1])
    out = np.empty(max(total, 1), dtype=np.uint8)
    flags = np.zeros(max(n, 1), dtype=np.uint8)
    if n:
        on_threads(workers, lambda w: KD.decode_gather(ids, loff, int(rb[w]), int(rb[w + 1]), vbits, voff,
                                                       has_nulls, tbytes, toffs, out_off, out, flags))
    bad_rows = np.flatnonzero(flags[:n])
    if len(bad_rows):
        if errors == "strict":
            r = int(bad_rows[0])
            data = out[out_off[r]:out_off[r + 1]]
            pos = int(KD.utf8_error_at(data, 0, len(data)))
            raise ArrowRowError(f"row {row_base + r}: the ids decode to invalid UTF-8 (byte {pos}); "
                                "pass errors='replace'", row_base + r)
        fixed = [out[out_off[r]:out_off[r + 1]].tobytes().decode("utf-8", "replace").encode("utf-8")
                 for r in bad_rows]
        roff = np.zeros(len(fixed) + 1, dtype=np.int64)
        np.cumsum([len(f) for f in fixed], out=roff[1:])
        rvals = np.frombuffer(b"".join(fixed), dtype=np.uint8) if roff[-1] else np.zeros(1, dtype=np.uint8)
        new_total = total + int(roff[-1]) - int((out_off[bad_rows + 1] - out_off[bad_rows]).sum())
        out2 = np.empty(max(new_total, 1), dtype=np.uint8)
        off2 = np.empty(n + 1, dtype=np.int64)
        KC.splice(out, out_off, bad_rows.astype(np.int64), rvals, roff, out2, off2)
        out, out_off, total = out2, off2, new_total
    validity = None
    null_count = 0
    if has_nulls:
        if arr.offset % 8 == 0:
            validity = bufs[0].slice(arr.offset // 8, (n + 7) // 8)
        else:
            bits = np.unpackbits(vbits, bitorder="little")[arr.offset:arr.offset + n]
            validity = pa.py_buffer(np.packbits(bits, bitorder="little"))
        null_count = arr.null_count
    return pa.Array.from_buffers(pa.large_string(), n, [validity, pa.py_buffer(out_off), pa.py_buffer(out[:total])],
                                 null_count=null_count)


def decode_arrow(enc, array, *, errors: str = "replace", num_threads: int = 0) -> pa.Array | pa.ChunkedArray:
    """list<uint32> (or any list/large_list of integers) -> `large_string`, one text per row.

    errors="replace": ids whose bytes are not valid UTF-8 give U+FFFD per maximal ill-formed
    subsequence (as `Encoding.decode`); "strict": ValueError naming the row. Unknown ids raise
    `UnknownTokenError` (a KeyError and a ValueError) naming the row; null rows stay null.
    """
    enc = enc.engine  # an Encoding or its engine (engine.core.Engine)
    if errors not in ("replace", "strict"):
        raise ValueError(f"errors must be 'replace' or 'strict', not {errors!r}")
    chunks, chunked = _chunks(array)
    threads = resolve_threads(num_threads)
    out = []
    row_base = 0
    for c in chunks:
        out.append(_decode_one(enc, c, errors, row_base, threads))
        row_base += len(c)
    return pa.chunked_array(out, type=pa.large_string()) if chunked else out[0]


def warmup(enc, threads=(1, 2)) -> None:
    """Compile (or load from the numba cache) every kernel this module runs, for this encoding;
    `threads`: the thread counts to run the column kernels with, in this order."""
    texts = ["Hello world\nsecond line", "日本語のテキスト。\n次", "", None, "x" * 70_000 + " y\nz"]
    for typ in (pa.string(), pa.large_string()):
        arr = pa.array(texts, type=typ)
        for n in threads:
            encode_arrow(enc, arr, num_threads=n)
            count_arrow(enc, arr, num_threads=n)
    sv = getattr(pa, "string_view", None)
    if sv is not None:
        encode_arrow(enc, pa.array(texts, type=sv()), num_threads=2)
        count_arrow(enc, pa.array(texts, type=sv()), num_threads=1)
    ids = encode_arrow(enc, pa.array(texts))
    decode_arrow(enc, ids)
    decode_arrow(enc, ids.cast(pa.large_list(pa.uint32())))
    find_cuts(enc, "a b\nc")
