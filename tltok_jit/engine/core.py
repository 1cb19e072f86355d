"""`Engine`: the kernel side of one `Encoding`.

An Encoding validates a call's arguments and hands it to its engine (`Encoding.engine`), which owns
what runs the kernels: the compiled tables (built on first use), the compiled entry points called
without the dispatcher, the per-thread workspaces and piece caches, the call handles of short calls
and of decodes, the one short-call path of `encode`, `count` and `encode_ordinary`, long texts split
over the cores, rows in parallel, and the added-token rules of a call (`special_policy`). The other
front ends (the Arrow columns, the stream encoder, the tokenizer.json runtime, padding) take the
engine too.

While the kernels compile in the background, `serving` (`compile.serving.PythonServing`, given by
the Encoding) says which calls the exact Python encoder answers instead.

>>> eng = tltok_jit.get_encoding("r50k_base").engine
>>> eng.tables.stage1.dtype, eng.no_added.flags.writeable
(dtype('uint16'), False)
"""

from __future__ import annotations

import ctypes
import functools
import sysconfig
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import AbstractSet

import numba
import numpy as np

from . import id_decode, pyints
from .args import check_text, check_threads, token_id_array
from ..errors import raise_disallowed_special_token
from ..kernels import decode as KD
from ..kernels import encode as K
from ..kernels import handle as KH
from ..kernels.cache import new_cache
from ..kernels.column_cuts import all_cuts
from ..kernels.pyargs import release_slot, take_slot
from ..kernels.scan import load_scanner
from ..kernels.utf8 import str_kind, str_utf8_into, str_utf8_len, str_utf8_rows
from ..model.description import ModelDescription
from .pages import id_buffer, populate, small_pages
from .pylist import IntObjects, int_objects
from .special_policy import AllowedSpecial, DisallowedSpecial, SpecialPolicy, build_policy, string_finder
from ..tables.bpe import compile_model, pattern_kind, table_config
from .text import (KERNEL_UTF8_MIN, ascii_view, load_text_kernels, no_lone_surrogates, read_only, read_only_view,
                   text_to_buf, text_to_utf8)
from .threads import PARALLEL_LOCK, balanced_bounds, on_threads, resolve_threads, workers_for

_RECHECK_CHARS = 1 << 20  # the Python encoder looks for ready kernels this often in a long column
_SPLIT_MIN = 1 << 20  # UTF-8 bytes: from here one text is split over the cores (unless num_threads=1)
_CUT_BACK = 8  # bytes of context before a window's first usable cut position
_CUT_WINDOW = 1 << 12  # bytes searched for a cut at a time (find_cuts lists all of a window's: keep it small)
_CUT_SEARCH = 1 << 16  # bytes after the ideal position searched before giving up on that cut


# The compiled encode_text_at for the one argument-type signature this module ever passes, called
# without the dispatcher (resolving the argument types costs more than encoding a short string).
_ENCODE_AT_ENTRY: list = [None]
_ASCII_AT_ENTRY: list = [None]
_STR_CALL_ENTRY: list = [None]
_HELD_CHARS = KH.GIL_HELD_CHARS  # a text of up to this many characters may use the shared call handle
_FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))  # the shared call handle needs the GIL
_HELD_INSTALL = threading.Lock()
# the per-thread scratch of Engine.encode_short holds the ids (<= UTF-8 bytes <= 4 per character)
# and the UTF-8 of a text of up to this many characters
SCRATCH = 4096
# the default `allowed_special` of encode and count: tiktoken's defaults are then told by identity
NOTHING_ALLOWED: frozenset = frozenset()
_DECODE_CALL_ENTRY: list = [None]
_DECODE_SCRATCH = 1 << 16  # bytes: the decode of one list or tuple by decode_list_call (longer: gather_list)


def held_ids_not_ready(text):
    """Engine.held_ids until the shared call handle is made: the general route's answer."""
    return None


def held_count_not_ready(text):
    """Engine.held_count until the shared call handle is made: the general route's answer."""
    return -1


def held_decode_not_ready(tokens):
    """Engine.held_text and held_bytes until the decode call handle is made (or where there is
    none: pyints' layout check failed, or a decoder chain): the checked path's answer."""
    return None


def _ids_unless_in(first: str, held_ids, text: str):
    """Engine.held_default_ids where the kernel cannot test for the added tokens' first character
    (`first`; "" when they have several: every text then takes the general route)."""
    return held_ids(text) if first not in text else None


def _count_unless_in(first: str, held_count, text: str) -> int:
    """Engine.held_default_count likewise."""
    return held_count(text) if first not in text else -1


def _packed(out: np.ndarray, base: list[int], fills: list[int]) -> np.ndarray:
    """The workers' ids, written at out[base[w]:base[w] + fills[w]] (base increasing, each region
    past the ids before it), moved down in place to follow one another; `out` shrunk to them."""
    n = fills[0]
    for w in range(1, len(base)):
        if fills[w] and n != base[w]:  # n <= base[w]: memmove, overlapping or not
            # (the pages below base[w] are fresh: faulted in by one madvise, then copied, 0.45 + 0.13 ms
            # for 1.5 MB; memmove taking the faults itself: 1.3-1.8)
            populate(out, n, n + fills[w])
            ctypes.memmove(out.ctypes.data + 4 * n, out.ctypes.data + 4 * base[w], 4 * fills[w])
        n += fills[w]
    out.resize(n, refcheck=False)  # shrinks in place; untouched pages were never committed
    return out


def _part_cuts(n: int, threads: int, cut_at) -> list[int]:
    """[0, cut, ...]: the cut cut_at(target) after each of threads - 1 equal shares of n positions (and
    _CUT_BACK past the cut before), up to the first share without one (None, or a cut at n or past)."""
    cuts = [0]
    for k in range(1, threads):
        cut = cut_at(max(k * n // threads, cuts[-1] + _CUT_BACK))
        if cut is None or cut >= n:
            break
        cuts.append(cut)
    return cuts


def _entry_point(dispatcher, args):
    """The compiled function of `dispatcher` for the types of `args` (None if not compiled)."""
    cres = dispatcher.overloads.get(tuple(numba.typeof(a) for a in args))
    return None if cres is None else cres.entry_point


@functools.lru_cache(maxsize=16)
def _char_finder(chars: str):
    import re

    return re.compile("[" + re.escape(chars) + "]")


class Engine:
    """The kernels of one model and the scratch state of its calls (see the module docstring).

    `pipeline` (what every call runs: `KernelPipeline`, or `hf.runtime.HFRuntime` for a tokenizer.json
    model) and `n_vocab` are set by the Encoding that owns the engine; `on_bind(engine)` is called
    whenever the engine binds its held calls (the Encoding keeps them as its own attributes: one
    attribute read on a short call)."""

    def __init__(self, model: ModelDescription, compiled, serving, *, use_cache: bool = True):
        self.description = model
        self.name: str = model.name
        self.serving = serving  # compile.serving.PythonServing: the Python encoder while the kernels compile
        self.pipeline = None
        self.n_vocab: int = 0
        self.on_bind = None
        self._use_cache = use_cache
        self._compiled_tables = compiled
        added = list(model.added_tokens)
        self.special_tokens: dict[str, int] = {t.content: t.id for t in added}
        self.added_index: dict[str, int] = {t.content: i for i, t in enumerate(added)}
        self.special_ids = np.array(sorted({t.id for t in added if t.special}), dtype=np.int64)
        self.no_added = np.zeros(max(len(added), 1), dtype=np.bool_)
        self.no_added.flags.writeable = False  # one array type for every call: one compilation
        self._masks: dict[frozenset, np.ndarray] = {}
        self._policies: dict[tuple[bool, bool], SpecialPolicy] = {}  # see special_policy
        self._local = threading.local()
        # ids / count of a text of up to _HELD_CHARS characters with tiktoken's defaults: the compiled
        # encode_str_call bound to this engine's shared call handle (see install_held_calls)
        self.held_ids = held_ids_not_ready
        self.held_count = held_count_not_ready
        # the same with tiktoken's default special-token arguments: the general route's answer
        # (None, -1) for a text that may hold an added token
        self.held_default_ids = held_ids_not_ready
        self.held_default_count = held_count_not_ready
        self._held_state = None
        self._parallel_state = None
        self._int_objects = None  # pylist.IntObjects, built by the first long list result
        # decode / decode_bytes of a list or tuple: the compiled decode_list_call bound to this
        # engine's decode call handle (see install_held_decode)
        self.held_text = held_decode_not_ready
        self.held_bytes = held_decode_not_ready
        self._held_decode_state = None
        self._decode_handle_of = None  # (id_decode.decode_handle, the arrays it points into)

    @property
    def engine(self) -> "Engine":
        """Itself: the front ends take an Encoding or its engine alike (`x.engine`)."""
        return self

    # ------------------------------------------------------------------ compiled tables (or not yet)
    @property
    def compiled(self):
        """The compiled model (tables.CompiledModel: tables, added tokens in table order, valid ids),
        built (or loaded from the cache) on first use."""
        c = self._compiled_tables
        if c is None:
            self.serving.wait_for_tables()  # while the Python encoder serves: the worker's compile, if alive
            c = compile_model(self.description, use_cache=self._use_cache)
            if not self.serving.text_kernels_ready():  # may compile: now rather than in a first long text
                load_text_kernels()  # (in the cache they load when first called: ~20 ms of a start)
            load_scanner(table_config(c.tables).pattern_kind)  # the one scanner this model runs
            self._compiled_tables = c
        return c

    @property
    def compiled_or_none(self):
        """The compiled model if it is built, else None (nothing is built)."""
        return self._compiled_tables

    @property
    def tables(self):
        """The kernel tables (kernels.layout), compiled or loaded on first use."""
        return self.compiled.tables

    @functools.cached_property
    def valid(self) -> np.ndarray:
        """bool[n_vocab]: the id has bytes (is decodable)."""
        if self._compiled_tables is None and self.serving.encoder is not None:
            return np.array([b is not None for b in self.serving.encoder.by_id], dtype=np.bool_)
        return self.compiled.valid

    # ------------------------------------------------------------------ special-token policy
    def mask(self, allowed: AbstractSet[str]) -> np.ndarray:
        """The read-only added-token mask (table order) of the strings `allowed`."""
        key = frozenset(allowed)
        m = self._masks.get(key)
        if m is None:
            m = self.no_added.copy()
            for s in key:
                i = self.added_index.get(s)
                if i is not None:
                    m[i] = True
            m.flags.writeable = False
            if len(self._masks) < 64:
                self._masks[key] = m
        return m

    def special_policy(self, allowed_special: AllowedSpecial = set(),
                       disallowed_special: DisallowedSpecial = "all") -> SpecialPolicy:
        """`Encoding.special_policy`: the frozen added-token rules (the usual ones built once)."""
        a_all, d_all = allowed_special == "all", disallowed_special == "all"
        if (a_all or not allowed_special) and (d_all or not disallowed_special):
            # tiktoken's usual arguments ("all" or nothing, each): built once per engine
            key = (a_all, d_all)
            p = self._policies.get(key)
            if p is None:
                p = self._policies[key] = build_policy(allowed_special, disallowed_special,
                                                       self.special_tokens.keys(), self.mask)
            return p
        return build_policy(allowed_special, disallowed_special, self.special_tokens.keys(), self.mask)

    def check_disallowed(self, text: str, buf: np.ndarray | None, policy: SpecialPolicy) -> None:
        """Raise DisallowedSpecialTokenError for the first refused string in the text (buf: its
        UTF-8 bytes, or None to make them when needed)."""
        if not policy.refused:
            return
        if policy.disallowed is not None:
            if text is not None and not self.may_hold_added(text):
                return
            if buf is None:
                buf = text_to_buf(text)
            pos, idx = K.find_added(buf, 0, len(buf), self.tables, policy.disallowed)
            if pos >= 0:
                raise_disallowed_special_token(self.compiled.added[idx].content)
        elif (m := policy.finder.search(text)) is not None:
            raise_disallowed_special_token(m.group())

    def check_disallowed_rows(self, texts: Sequence[str], data: np.ndarray, offsets: np.ndarray,
                              policy: SpecialPolicy) -> None:
        """check_disallowed of rows (their UTF-8 `data` at `offsets`): the first row that has a refused
        string reports it, as encoding them one by one would."""
        if policy.disallowed is not None:
            r, idx = K.find_added_rows(data, offsets, self.tables, policy.disallowed)
            if r >= 0:
                raise_disallowed_special_token(self.compiled.added[idx].content)
        elif policy.finder is not None:
            for t in texts:
                self.check_disallowed(t, None, policy)

    def short_call_policy(self, text: str, allowed_special: AllowedSpecial,
                          disallowed_special: DisallowedSpecial) -> SpecialPolicy | None:
        """The policy of a short call of encode or count, after refusing what it refuses in `text`;
        None for tiktoken's defaults on a text that holds no added token (the usual call)."""
        if allowed_special is NOTHING_ALLOWED and disallowed_special == "all":
            if not self.may_hold_added(text):
                return None
            policy = self.refuse_all
        else:
            policy = self.special_policy(allowed_special, disallowed_special)
        if policy.refused:
            self.check_disallowed(text, None, policy)
        return policy

    @functools.cached_property
    def refuse_all(self) -> SpecialPolicy:
        """The policy of tiktoken's default arguments: no special token allowed, every one refused."""
        return self.special_policy()

    @functools.cached_property
    def added_first_chars(self) -> str | None:
        """The first characters of the added tokens; None when one starts with U+FFFD (a lone
        surrogate in the text becomes U+FFFD before matching, so the text itself would not tell)."""
        firsts = {t[0] for t in self.special_tokens}
        return None if "\ufffd" in firsts else "".join(sorted(firsts))

    @functools.cached_property
    def added_first_char(self) -> str:
        """The first character of every added token when they share one (`c not in text` then
        proves the text holds none); else "" (in every text: the caller takes its general test)."""
        firsts = self.added_first_chars
        if firsts == "":  # no added token: a lone surrogate, which texts seldom hold (and then lose nothing)
            return "\udfff"
        return firsts if firsts is not None and len(firsts) == 1 else ""

    def may_hold_added(self, text: str) -> bool:
        """False when `text` cannot contain an added token (none of their first characters is in
        it): the common case, decided without calling a kernel."""
        firsts = self.added_first_chars
        if firsts is None:
            return True
        if len(firsts) == 1:
            return firsts in text
        if len(firsts) <= 8:
            return any(c in text for c in firsts)
        return _char_finder(firsts).search(text) is not None

    # ------------------------------------------------------------------ scratch state
    def serial_workspace(self):
        """(piece cache, merge work) of the calling thread, for a one-thread kernel call."""
        st = getattr(self._local, "state", None)
        if st is None:
            st = (new_cache(1), K.new_work(1))
            self._local.state = st
        return st

    def parallel_workspace(self, workers: int):
        """(piece cache, merge work) with rows for `workers` threads, for a parallel kernel call (under
        PARALLEL_LOCK)."""
        st = self._parallel_state
        if st is None or st[0].hashes.shape[0] < workers:
            st = (new_cache(workers), K.new_work(workers))
            self._parallel_state = st
        return st

    def serial_handle(self):
        """(this thread's kernels.handle address array, its merge scratch row, its id scratch for
        texts of up to SCRATCH characters, the address of the call handle of all three and a UTF-8
        scratch, the UTF-8 scratch, the call handle, the int objects its lists hold)."""
        hs = getattr(self._local, "handle", None)
        if hs is None:
            cache, work = self.serial_workspace()
            h = KH.handle_of(self.tables, cache)
            out = np.empty(4 * SCRATCH, dtype=np.uint32)
            utf8 = np.empty(4 * SCRATCH, dtype=np.uint8)
            objs = self.int_object_table()
            call = KH.call_handle_of(h, out, work[0], self.no_added, utf8, int_objects=objs.shared_addrs)
            hs = (h, work[0], out, call.ctypes.data, utf8, call, objs)
            self._local.handle = hs
        return hs

    def _bound(self) -> None:
        if self.on_bind is not None:
            self.on_bind(self)

    # ------------------------------------------------------------------ short calls
    def install_held_calls(self, entry) -> None:
        """Bind held_ids, held_count and their held_default_ twins to the compiled encode_str_call
        `entry` and one call handle shared by every thread (call_handle_of's `shared`): the kernel
        holds the GIL for the texts it takes with it, so no two calls use its scratch at once, and a
        call skips looking up its thread's handle (~10% of a 20-character call). Made once; the
        arrays live as long as self.

        The held_default_ calls refuse a text holding the one ASCII character every added token
        starts with in the kernel (it reads the text anyway; `c in text` in Python cost ~10% of a
        20-character call); other added tokens are tested in Python first."""
        with _HELD_INSTALL:
            if self._held_state is not None:
                return
            if _FREE_THREADED:  # no GIL to serialize the shared scratch: every call takes its thread's
                self._held_state = ()
                return
            cache, work = new_cache(1), K.new_work(1)
            h = KH.handle_of(self.tables, cache)
            out = np.empty(4 * _HELD_CHARS, dtype=np.uint32)
            utf8 = np.empty(4 * _HELD_CHARS, dtype=np.uint8)
            objs = self.int_object_table()
            first = self.added_first_char  # U+DFFF: no added token
            refused = ord(first) if len(first) == 1 and first.isascii() else -1
            call = KH.call_handle_of(h, out, work[0], self.no_added, utf8, shared=True, int_objects=objs.shared_addrs,
                                     refused=refused)
            self._held_state = (cache, work, h, out, utf8, call, objs)
            slot = take_slot(call.ctypes.data)  # a small int: unboxed faster than the address
            weakref.finalize(self, release_slot, slot)  # before the arrays go, with self
            self.held_ids = functools.partial(entry, slot, KH.AS_LIST)
            self.held_count = functools.partial(entry, slot, 0)
            if refused >= 0 or first == "\udfff":
                self.held_default_ids = functools.partial(entry, slot, KH.AS_LIST | KH.REFUSE_ADDED)
                self.held_default_count = functools.partial(entry, slot, KH.REFUSE_ADDED)
            else:  # (partials of plain functions: no reference back to self)
                self.held_default_ids = functools.partial(_ids_unless_in, first, self.held_ids)
                self.held_default_count = functools.partial(_count_unless_in, first, self.held_count)
        self._bound()

    def short(self, text: str, allowed_special, disallowed_special, as_list: bool):
        """The one short-call path of encode (as_list), count (not as_list) and encode_ordinary
        (allowed_special None: added tokens are plain text), for a str of at most SCRATCH characters
        and a model the kernels alone encode: the ids as a list, or their count; None for the
        general route (a lone surrogate, an allowed token in a text that is not ASCII, the Python
        encoder serving). Refuses what the call refuses in `text` first."""
        if self.serving.encoder is not None:
            return None
        policy = None if allowed_special is None else self.short_call_policy(text, allowed_special,
                                                                             disallowed_special)
        entry = _STR_CALL_ENTRY[0]
        if entry is not None and (policy is None or not policy.any_allowed):  # encode_short, inlined
            if self._held_state is None:
                self.install_held_calls(entry)
            try:
                call = self._local.handle
            except AttributeError:
                call = self.serial_handle()
            if as_list:  # the kernel makes the list
                return entry(call[3], KH.AS_LIST, text)
            n = entry(call[3], 0, text)
            return n if n >= 0 else None
        if policy is None or not policy.any_allowed:
            out, n = self.encode_short(text, self.no_added, False)
        elif text.isascii():
            out, n = self.encode_short(text, policy.allowed, True)
        else:
            return None
        if n < 0:
            return None
        return out[:n].tolist() if as_list else n

    def encode_short(self, text: str, amask: np.ndarray, any_allowed: bool):
        """(this thread's id scratch, n): the ids of a `text` of at most SCRATCH characters (ASCII
        when `any_allowed`) are scratch[:n], valid until this thread's next call; n = -1 when the
        text holds a lone surrogate (the caller takes the general route, tiktoken's rule for it).
        No output array is allocated or resized (that cost more than encoding 20 characters)."""
        try:
            h, vals, out, call = self._local.handle[:4]
        except AttributeError:
            h, vals, out, call = self.serial_handle()[:4]
        if not any_allowed:  # the mask is not read: everything but the text is in the call handle
            entry = _STR_CALL_ENTRY[0]
            if entry is None:
                entry = _STR_CALL_ENTRY[0] = KH.str_call_entry()
            return out, entry(call, 0, text)
        entry = _ASCII_AT_ENTRY[0]
        if entry is None:
            n = KH.encode_ascii_at(text, h, amask, any_allowed, out, vals)
            _ASCII_AT_ENTRY[0] = _entry_point(KH.encode_ascii_at, (text, h, amask, any_allowed, out, vals))
            return out, n
        return out, entry(text, h, amask, any_allowed, out, vals)

    # ------------------------------------------------------------------ one text
    def encode_text(self, text: str, amask: np.ndarray, any_allowed: bool) -> np.ndarray:
        """uint32 ids of a str (added tokens of `amask` matched), one thread."""
        if not text.isascii():  # O(1): CPython keeps the flag
            return self.encode_buf(text_to_buf(text), amask, any_allowed)
        if len(text) <= SCRATCH:
            out, n = self.encode_short(text, amask, any_allowed)
            return out[:n].copy()
        # the str's own characters, through the same compiled entry as other long texts: a first long
        # ASCII text after non-ASCII ones loaded a kernel of its own from the cache (~2.5 ms of it)
        return self.encode_buf(ascii_view(text), amask, any_allowed)

    def encode_buf(self, buf: np.ndarray, amask: np.ndarray, any_allowed: bool) -> np.ndarray:
        """uint32 ids of the UTF-8 bytes `buf` (added tokens of `amask` matched), one thread."""
        out = id_buffer(len(buf))
        h, vals = self.serial_handle()[:2]
        args = (buf, h, amask, any_allowed, out, vals)
        entry = _ENCODE_AT_ENTRY[0]
        if entry is None:
            n = KH.encode_text_at(*args)
            _ENCODE_AT_ENTRY[0] = _entry_point(KH.encode_text_at, args)
        else:
            n = entry(*args)
        out.resize(n, refcheck=False)  # shrinks in place; untouched pages were never committed
        return out

    def encode(self, text: str, policy: SpecialPolicy, allowed_special: AllowedSpecial,
               num_threads: int | None) -> np.ndarray:
        """encode_to_numpy after the special-token policy, by the kernels (KernelPipeline.encode)."""
        self.check_disallowed(text, None, policy)
        amask, any_allowed = policy.allowed, policy.any_allowed
        if num_threads is not None:
            num_threads = check_threads(num_threads)
        # (by default only once every stage is compiled: the split runs the row kernels)
        if (num_threads != 1 and len(text) >= _SPLIT_MIN // 4  # <= 4 bytes a character
                and (num_threads is not None or self.serving.encoder is None)):
            ids = self.encode_split(text, allowed_special, num_threads, amask, any_allowed)
            if ids is not None:
                return ids
        return self.encode_text(text, amask, any_allowed)

    def encode_split(self, text: str, allowed_special: AllowedSpecial, num_threads: int | None,
                     amask: np.ndarray, any_allowed: bool) -> np.ndarray | None:
        """One long text on several cores: cut into one part per thread, each cut the first position
        no pretoken crosses (arrow.find_cuts' rules) after an equal share of the bytes, and the parts
        encoded as rows of one parallel call (their ids, in order, are the text's). None for one
        core, a text of fewer than _SPLIT_MIN bytes, a split pattern without such cuts, or a text
        with too few of them."""
        threads = resolve_threads(num_threads)
        if threads < 2 or (text.isascii() and len(text) < _SPLIT_MIN):
            return None
        T = self.tables
        if not pattern_kind(T).column_cuts:
            return None
        allowed = self.special_tokens.keys() if allowed_special == "all" else allowed_special
        # a cut never falls inside an allowed token (the others are plain text or refused already)
        rule_nl = not any("\n" in t[:-1] for t in allowed)
        rule_sp = not any(" " in t[1:] for t in allowed)
        if not text.isascii() and str_kind(text) == 1:  # Latin-1 (European prose)
            if len(text) < _SPLIT_MIN and str_utf8_len(text, 0, len(text)) < _SPLIT_MIN:
                return None
            ids = self._encode_split_chars(text, threads, rule_nl, rule_sp, amask, any_allowed)
            if ids is not None:
                return ids
        # ASCII: the str's own characters (its copy took ~5% of the call); else the UTF-8 kernel or
        # CPython's encoder (text_to_buf). `data` does not outlive this call.
        data = ascii_view(text) if text.isascii() else text_to_buf(text)
        if len(data) < _SPLIT_MIN:
            return None
        cuts = _part_cuts(len(data), threads, lambda target: self._byte_cut(data, target, rule_nl, rule_sp))
        if len(cuts) < 2:
            return None
        offsets = np.array(cuts + [len(data)], dtype=np.int64)
        valid = np.ones(len(cuts), dtype=np.uint8)
        ids, _ = self.pipeline.encode_rows(data, offsets, valid, amask, any_allowed, len(cuts))
        return ids

    def _window_cut(self, buf: np.ndarray, lo: int, hi: int, first: int, last: int, rule_nl: bool,
                    rule_sp: bool) -> int | None:
        """The first cut (arrow.find_cuts' rules) c of the window buf[lo:hi] with first <= c <= last,
        or None. (The kernel of arrow.find_cuts, called here: importing arrow, and pyarrow with it,
        was half of a first long call.)"""
        T = self.tables
        for c in all_cuts(buf, lo, hi, T.stage1, T.stage2, rule_nl, rule_sp).tolist():
            if first <= c <= last:
                return c
        return None

    def _byte_cut(self, data: np.ndarray, target: int, rule_nl: bool, rule_sp: bool) -> int | None:
        """encode_split's cut search: the first cut at or after byte `target` of the UTF-8 `data`, within
        _CUT_SEARCH bytes, or None. A window's cuts from byte _CUT_BACK on are cuts of the whole text:
        the rules read the character ending at the position and the one after it, at most 5 bytes back."""
        for lo in range(target - _CUT_BACK, min(target + _CUT_SEARCH, len(data)), _CUT_WINDOW):
            cut = self._window_cut(data, lo, min(lo + _CUT_WINDOW + 4, len(data)), lo + _CUT_BACK, lo + _CUT_WINDOW,
                                   rule_nl, rule_sp)
            if cut is not None:
                return cut
        return None

    def _char_cut(self, text: str, target: int, rule_nl: bool, rule_sp: bool) -> int | None:
        """_byte_cut in character space: the first cut at or after character `target`, found in the
        UTF-8 of windows of the text; None if there is none within _CUT_SEARCH characters, or a
        window holds a surrogate."""
        n = len(text)
        for lo in range(target - _CUT_BACK, min(target + _CUT_SEARCH, n), _CUT_WINDOW):
            try:
                window = np.frombuffer(text[lo:min(lo + _CUT_WINDOW + 4, n)].encode("utf-8"), dtype=np.uint8)
            except UnicodeEncodeError:
                return None
            # from byte _CUT_BACK on (at least as many characters), and one whole character after it
            c = self._window_cut(window, 0, len(window), _CUT_BACK, len(window) - 4, rule_nl, rule_sp)
            if c is not None:
                return lo + int(np.count_nonzero((window[:c] & 0xC0) != 0x80))  # characters before c
        return None

    def _encode_split_chars(self, text: str, threads: int, rule_nl: bool, rule_sp: bool, amask: np.ndarray,
                            any_allowed: bool) -> np.ndarray | None:
        """encode_split of a Latin-1 text, cut in character space: each worker converts its own part to
        UTF-8 (str_utf8_into) before it encodes it, so only a count of the bytes (str_utf8_len, ~0.1
        ms a part) comes before them, not the whole conversion (0.6-1.0 ms of 3.2 MB of European
        prose). (Wider strings: converting 1.9 MB of Chinese on two workers took 1.1 ms each, CPython's
        encoder 0.85-1.0 on one, so those take the byte route.) None when no cut is found (the caller
        then takes the byte route); a surrogate cannot occur in a Latin-1 str."""
        n = len(text)
        cuts = _part_cuts(n, threads, lambda target: self._char_cut(text, target, rule_nl, rule_sp))
        if len(cuts) < 2:
            return None
        cuts.append(n)
        parts = len(cuts) - 1
        offsets = np.zeros(parts + 1, dtype=np.int64)
        for w in range(parts):
            offsets[w + 1] = offsets[w] + str_utf8_len(text, cuts[w], cuts[w + 1])
        total = int(offsets[-1])
        # allocated here, where the freed buffers of earlier calls are (a worker thread's fresh memory
        # took ~3 us a page to fault in)
        data = np.empty(total, dtype=np.uint8)
        data_ro = read_only_view(data)  # (the kernels' one variant reads a read-only buffer)
        out = small_pages(np.empty(max(total, 1), dtype=np.uint32))  # ids <= bytes, as in encode_rows
        base = offsets[:-1].tolist()
        valid = np.ones(parts, dtype=np.uint8)
        counts = np.empty(parts, dtype=np.int64)
        fills = [0] * parts
        declined = [False]
        T = self.tables

        def work_on(w: int) -> None:
            if not str_utf8_into(text, cuts[w], cuts[w + 1], data[base[w]:]):
                declined[0] = True
                return
            fills[w] = K.encode_chunk(data_ro, offsets, valid, 0, w, w + 1, T, amask, any_allowed, out[base[w]:],
                                      counts, cache, w, work[w])

        with PARALLEL_LOCK:
            cache, work = self.parallel_workspace(parts)
            on_threads(parts, work_on)
        if declined[0]:
            return None
        return _packed(out, base, fills)

    # ------------------------------------------------------------------ rows
    def encode_rows(self, data: np.ndarray, offsets: np.ndarray, valid: np.ndarray, amask: np.ndarray,
                    any_allowed: bool, num_threads: int) -> tuple[np.ndarray, np.ndarray]:
        """Encoding.encode_rows of checked offsets by the kernels, on up to `num_threads` threads."""
        n_rows = len(offsets) - 1
        total = int(offsets[-1] - offsets[0]) if n_rows else 0
        # ids are written densely (each worker's rows one after another): only the pages they fill
        # are committed, and worker 0's are already in place
        counts = np.empty(n_rows, dtype=np.int64)
        threads = workers_for(max(1, min(resolve_threads(num_threads), n_rows)), total)
        out = id_buffer(total) if threads == 1 else small_pages(np.empty(max(total, 1), dtype=np.uint32))
        T = self.tables
        if threads == 1:
            cache, work = self.serial_workspace()
            n = K.encode_chunk(data, offsets, valid, 0, 0, n_rows, T, amask, any_allowed, out, counts,
                               cache, 0, work[0])
            out = _packed(out, [0], [n])
        else:
            bounds = balanced_bounds(offsets, threads)  # byte-balanced contiguous chunks, one per worker
            # each worker writes where its bytes start (ids <= bytes: the regions do not overlap), then
            # the ids move down in place: every page was touched by a worker, in parallel (copying
            # from buffers of their own faulted half of `out` in one thread: ~10% of a long text)
            base = [int(offsets[bounds[w]] - offsets[0]) for w in range(threads)]
            fills = [0] * threads

            def work_on(w: int) -> None:
                fills[w] = K.encode_chunk(data, offsets, valid, 0, int(bounds[w]), int(bounds[w + 1]), T,
                                          amask, any_allowed, out[base[w]:], counts, cache, w, work[w])

            with PARALLEL_LOCK:
                cache, work = self.parallel_workspace(threads)
                on_threads(threads, work_on)
            out = _packed(out, base, fills)
        new_offsets = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(counts, out=new_offsets[1:])
        return out, new_offsets

    def encode_text_rows(self, texts: Sequence[str], data: np.ndarray, offsets: np.ndarray, num_threads: int,
                         amask: np.ndarray, any_allowed: bool) -> tuple[np.ndarray, np.ndarray]:
        """The pipeline's encode_rows of texts_to_rows(texts): the offsets need no check, and a pipeline
        that checks rows in Python (a normalizer) reads the str it was given instead of decoding the
        row again."""
        valid = np.ones(len(offsets) - 1, dtype=np.uint8)
        return self.pipeline.encode_rows(data, offsets, valid, amask, any_allowed, num_threads, texts=texts)

    @staticmethod
    def texts_to_rows(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(UTF-8 of all texts, int64 row offsets). One join and one encode when that is exact: every
        text ASCII (byte offsets = character offsets) or Latin-1 (str_utf8_rows)."""
        try:
            joined = "".join(texts)
        except TypeError:
            bad = next(i for i, t in enumerate(texts) if not isinstance(t, str))
            check_text(texts[bad], f"texts[{bad}] (batch item {bad})")
            raise
        if len(texts) > 1 and (joined.isascii() or len(joined) >= KERNEL_UTF8_MIN):
            offsets = np.zeros(len(texts) + 1, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), out=offsets[1:])
            if joined.isascii():
                return np.frombuffer(joined.encode("ascii"), dtype=np.uint8), offsets
            byte_offsets = np.empty_like(offsets)
            data, ok = str_utf8_rows(joined, offsets, byte_offsets)
            if ok:
                return read_only(data), byte_offsets
        encoded = [text_to_utf8(t) for t in texts]
        lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        return data, offsets

    # ------------------------------------------------------------------ id lists
    def to_list(self, ids: np.ndarray, num_threads: int | None = 1) -> list[int]:
        """ids.tolist(), faster for long outputs: a list of prebuilt int objects (one per vocabulary
        id), see pylist.py; a long one filled on the cores `num_threads` allows (resolve_threads)."""
        if len(ids) < 256:
            return ids.tolist()
        return self.int_object_table().to_list(ids, resolve_threads(num_threads))

    def split_list(self, ids: np.ndarray, offsets: np.ndarray, num_threads: int | None) -> list[list[int]]:
        """The rows of (ids, offsets) as lists."""
        flat = self.to_list(ids, num_threads)
        o = offsets.tolist()
        return [flat[o[i]:o[i + 1]] for i in range(len(o) - 1)]

    def int_object_table(self) -> IntObjects:
        """The process's immortal int objects (pylist.int_objects; made once, ~20 ms for o200k): long
        list results and the lists of short calls (call_handle_of's int_objects) hold these."""
        objs = self._int_objects
        if objs is None:
            objs = self._int_objects = int_objects(self.n_vocab)
        return objs

    # ------------------------------------------------------------------ Arrow columns
    def encode_arrow(self, array, *, num_threads: int, allowed_special: AllowedSpecial,
                     disallowed_special: DisallowedSpecial, errors: str, large_list: bool | None,
                     counting: bool):
        """encode_arrow (counting: count_arrow) by the kernels, or the Python encoder while they compile
        (KernelPipeline.encode_arrow)."""
        from ..columns import arrow

        if errors in ("replace", "strict") and self.serving.serve("arrow"):
            out = self.interim_column(array, allowed_special, disallowed_special, counting, large_list)
            if out is not None:
                return out
        if counting:
            return arrow.count_arrow(self, array, num_threads=num_threads, allowed_special=allowed_special,
                                     disallowed_special=disallowed_special, errors=errors)
        return arrow.encode_arrow(self, array, num_threads=num_threads, allowed_special=allowed_special,
                                  disallowed_special=disallowed_special, errors=errors, large_list=large_list)

    # ------------------------------------------------------------------ the Python encoder (while the kernels compile)
    def interim_ids(self, text: str, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial,
                    add_special_tokens: bool = False) -> list[int]:
        """encode() by the Python encoder, with tiktoken's special-token rules (and, for tokenizer.json
        models, the post-processor's ids around the text with add_special_tokens)."""
        check_text(text)
        policy = self.special_policy(allowed_special, disallowed_special)
        if policy.refused and (m := string_finder(policy.refused).search(text)) is not None:
            raise_disallowed_special_token(m.group())
        ids = self.serving.encoder.encode(no_lone_surrogates(text), policy.allowed_tokens)
        if add_special_tokens:
            ids = [*self.pipeline.prefix_ids, *ids, *self.pipeline.suffix_ids]
        return ids

    def interim_batch(self, texts, allowed_special, disallowed_special,
                      add_special_tokens: bool = False) -> list[list[int]]:
        """interim_ids of each text."""
        texts = texts if isinstance(texts, (list, tuple)) else list(texts)
        out = []
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"sequence item {i}: expected str instance, {type(t).__name__} found")
            out.append(self.interim_ids(t, allowed_special, disallowed_special, add_special_tokens))
        return out

    def interim_column(self, array, allowed_special, disallowed_special, counting: bool, large_list):
        """encode_arrow / count_arrow of a string column by the Python encoder; None when the column
        needs the kernels' path (other types, invalid UTF-8, a disallowed special token: its error
        names the row)."""
        import pyarrow as pa

        from ..columns.arrow import as_arrow

        arr = as_arrow(array)
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            return None
        chunked = isinstance(arr, pa.ChunkedArray)
        results = []
        n_ids = since_check = 0
        for chunk in (arr.chunks if chunked else [arr]):
            try:
                texts = chunk.to_pylist()
            except UnicodeDecodeError:
                return None
            rows = []
            for t in texts:
                if t is None:
                    rows.append(None)
                    continue
                try:
                    ids = self.interim_ids(t, allowed_special, disallowed_special)
                except ValueError:
                    return None
                n_ids += len(ids)
                since_check += len(t)
                if since_check > _RECHECK_CHARS:  # the kernels may be ready by now: they take the rest
                    since_check = 0
                    if self.serving.stage_ready("arrow"):
                        return None
                rows.append(len(ids) if counting else ids)
            results.append(rows)
        if counting:
            typ = pa.int64()
        elif large_list is None and n_ids > 2**31 - 1:
            return None
        else:
            typ = pa.large_list(pa.uint32()) if large_list else pa.list_(pa.uint32())
        out = [pa.array(rows, type=typ) for rows in results]
        return pa.chunked_array(out, type=typ) if chunked else out[0]

    # ------------------------------------------------------------------ single tokens
    def token_id_of_bytes(self, data: bytes) -> int:
        """The id of the token whose bytes are `data` (-1: none)."""
        if self.serving.serve("single"):
            t = self.serving.encoder.ranks.get(data)
            return -1 if t is None else t
        from ..kernels.hashing import token_id_of_bytes

        return token_id_of_bytes(self.tables, data)

    def token_bytes(self, ids: Iterable[int]) -> list[bytes]:
        """The bytes of each of the valid `ids`."""
        if self.serving.serve("single"):
            by_id = self.serving.encoder.by_id
            return [by_id[t] for t in ids]
        o = self.tables.tok_offsets
        b = self.tables.tok_bytes
        return [b[o[t]:o[t + 1]].tobytes() for t in ids]

    def piece_ends(self, buf: np.ndarray) -> np.ndarray:
        """The end of each piece of the split pattern in the UTF-8 `buf` (encode_with_unstable's split)."""
        from ..kernels.scan import piece_ends

        t = self.tables
        return piece_ends(table_config(t).pattern_kind, buf, 0, len(buf), t.stage1, t.stage2)

    # ------------------------------------------------------------------ decoding
    def plain_decode(self, skip_special_tokens: bool) -> bool:
        """Whether decode is the token bytes joined (no special token to drop, no decoder chain)."""
        pipe = self.pipeline.pipe
        return ((not skip_special_tokens or not len(self.special_ids))
                and (pipe is None or pipe.decoder is None))

    def install_held_decode(self) -> None:
        """Bind held_text and held_bytes to the compiled decode_list_call and a call handle of this
        engine's tables (in a call slot) and a scratch shared by every thread: the kernel holds the
        GIL. Made once, when the kernels are ready; not where the decode is more than the token bytes
        joined or pyints cannot read the int objects."""
        with _HELD_INSTALL:
            if self._held_decode_state is not None:
                return
            pipe = self.pipeline.pipe
            if not pyints.available() or (pipe is not None and pipe.decoder is not None):
                self._held_decode_state = ()
                return
            entry = _DECODE_CALL_ENTRY[0]
            if entry is None:
                entry = _DECODE_CALL_ENTRY[0] = KD.decode_call_entry()
            scratch = np.empty(_DECODE_SCRATCH, dtype=np.uint8)
            call = id_decode.decode_call_handle(self.decode_handle(), scratch)
            self._held_decode_state = (self._decode_handle_of, scratch, call)
            slot = take_slot(call.ctypes.data)
            weakref.finalize(self, release_slot, slot)
            self.held_text = functools.partial(entry, slot, True)
            self.held_bytes = functools.partial(entry, slot, False)
        self._bound()

    def decode_handle(self) -> np.ndarray:
        """id_decode.decode_handle of the tables (which the engine keeps alive)."""
        hs = self._decode_handle_of
        if hs is None or hs[1] is not self.tables:
            t, valid = self.tables, self.valid
            hs = self._decode_handle_of = (id_decode.decode_handle(t.tok_bytes, t.tok_offsets, valid), t, valid)
        return hs[0]

    def fast_decode_bytes(self, tokens, unknown_token) -> bytes | None:
        """decode_bytes of a plain decode by id_decode, or None for the checked path to answer
        (`unknown_token(i)`: the error of an id outside the vocabulary)."""
        kind = type(tokens)
        if kind is list or kind is tuple:
            if self.serving.serve("single"):
                return None
            if self._held_decode_state is None:
                self.install_held_decode()
            data = self.held_bytes(tokens)
            return data if data is not None else id_decode.gather_list(tokens, self.decode_handle())
        elif not isinstance(tokens, (list, tuple, np.ndarray)) or self.serving.serve("single"):
            return None  # an iterator is read once, by the checked path
        t = self.tables
        return id_decode.gather(token_id_array(tokens, unknown_token), t.tok_bytes, t.tok_offsets, self.valid)

    def gather_bytes(self, ids: np.ndarray) -> bytes:
        """The token bytes of valid ids joined (KernelPipeline.decode_bytes)."""
        if self.serving.serve("single"):
            return self.serving.encoder.decode_bytes(ids)
        data = id_decode.gather(ids, self.tables.tok_bytes, self.tables.tok_offsets, self.valid)
        if data is None:
            raise AssertionError("unreachable: the caller checked every id")
        return data

    def fast_decode_bytes_batch(self, batch) -> list[bytes] | None:
        """decode_bytes of each row by one kernel call, or None for the row-by-row path."""
        if self.serving.serve("single"):
            return None
        flat = id_decode.flat_ids(batch)
        if flat is None:
            return None
        t = self.tables
        return id_decode.gather_batch(*flat, t.tok_bytes, t.tok_offsets, self.valid)
