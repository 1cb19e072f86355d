"""`Encoding`: the public tokenizer object (tiktoken's interface, exact ids, numba kernels)."""

from __future__ import annotations

import ctypes
import functools
import os
import sysconfig
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, AbstractSet

import numba
import numpy as np

from .engine import id_decode, pyints
from .compile import python_encoder as interim, background as warm
from .engine.args import check_int, check_text, check_threads, token_id_array
from .errors import DisallowedSpecialTokenError, UnknownTokenError, raise_disallowed_special_token  # noqa: F401
from .kernels import decode as KD
from .kernels import encode as K
from .kernels import handle as KH
from .kernels.cache import new_cache
from .kernels.column_cuts import all_cuts
from .kernels.pyargs import release_slot, take_slot
from .kernels.scan import load_scanner
from .kernels.utf8 import str_kind, str_utf8_into, str_utf8_len, str_utf8_rows
from .model.description import ModelDescription
from .engine.pages import id_buffer, populate, small_pages
from .columns.pandas_io import is_pandas_series
from .engine.kernel_pipeline import KernelPipeline
from .engine.pylist import IntObjects, int_objects
from .engine.recipe import abspath, cached
from .engine.special_policy import AllowedSpecial, DisallowedSpecial, SpecialPolicy, build_policy, string_finder
from .tables.bpe import compile_model, pattern_kind, table_config
from .engine.text import (KERNEL_UTF8_MIN, ascii_view, load_text_kernels, no_lone_surrogates, read_only,
                          read_only_view, text_to_buf, text_to_utf8)
from .engine.threads import PARALLEL_LOCK, balanced_bounds, on_threads, resolve_threads, workers_for

if TYPE_CHECKING:  # the call imports tltok_jit.padding when it runs
    from .padding import PaddedBatch


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
# the per-thread scratch of Encoding._encode_short holds the ids (<= UTF-8 bytes <= 4 per character)
# and the UTF-8 of a text of up to this many characters
_SCRATCH = 4096
# the default `allowed_special` of encode and count: tiktoken's defaults are then told by identity
_NOTHING_ALLOWED: frozenset = frozenset()
_DECODE_CALL_ENTRY: list = [None]
_DECODE_SCRATCH = 1 << 16  # bytes: the decode of one list or tuple by decode_list_call (longer: gather_list)


def _held_ids_not_ready(text):
    """Encoding._held_ids until the shared call handle is made: the general route's answer."""
    return None


def _held_count_not_ready(text):
    """Encoding._held_count until the shared call handle is made: the general route's answer."""
    return -1


def _ids_unless_in(first: str, held_ids, text: str):
    """Encoding._held_default_ids where the kernel cannot test for the added tokens' first character
    (`first`; "" when they have several: every text then takes the general route)."""
    return held_ids(text) if first not in text else None


def _count_unless_in(first: str, held_count, text: str) -> int:
    """Encoding._held_default_count likewise."""
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


def _held_decode_not_ready(tokens):
    """Encoding._held_text and _held_bytes until the decode call handle is made (or where there is
    none: pyints' layout check failed, or a decoder chain): the checked path's answer."""
    return None


def _entry_point(dispatcher, args):
    """The compiled function of `dispatcher` for the types of `args` (None if not compiled)."""
    cres = dispatcher.overloads.get(tuple(numba.typeof(a) for a in args))
    return None if cres is None else cres.entry_point


@functools.lru_cache(maxsize=16)
def _char_finder(chars: str):
    import re

    return re.compile("[" + re.escape(chars) + "]")


def _tokenizer_json_modules():
    """(interim_hf, pipeline_runtime), imported when a tokenizer.json model is first built: a process
    that uses only rank files never loads the tokenizer.json pipeline (~40 ms of its start-up)."""
    from .compile import python_encoder_hf as interim_hf
    from .hf import runtime as pipeline_runtime

    return interim_hf, pipeline_runtime


class KernelFacade:
    """What the other front ends (the Arrow columns, the stream encoder, the tokenizer.json runtime)
    use of an Encoding to run its kernels; not part of tiktoken's interface.

    >>> f = tltok_jit.get_encoding("r50k_base").facade
    >>> f.tables.stage1.dtype, f.no_added.flags.writeable
    (dtype('uint16'), False)
    """

    __slots__ = ("_enc",)

    def __init__(self, enc: Encoding):
        self._enc = enc

    @property
    def tables(self):
        """The kernel tables (kernels.layout), compiled or loaded on first use."""
        return self._enc._t

    @property
    def compiled(self):
        """The compiled model (tables.CompiledModel: tables, added tokens in table order, valid ids)."""
        return self._enc._compiled

    @property
    def description(self) -> ModelDescription:
        return self._enc._model

    @property
    def no_added(self) -> np.ndarray:
        """The read-only all-False added-token mask (one array type for every call: one compilation)."""
        return self._enc._no_added

    @property
    def pipeline(self):
        """What every call of the Encoding runs (pipeline_kernels.KernelPipeline, or pipeline_runtime.HFRuntime for a
        tokenizer.json model: normalizer, Python pretokenizer, post-processor, decoder around the kernels)."""
        return self._enc._pipeline

    def serial_workspace(self):
        """(piece cache, merge work) of the calling thread, for a one-thread kernel call."""
        return self._enc._serial_state()

    def parallel_workspace(self, workers: int):
        """(piece cache, merge work) with rows for `workers` threads, for a parallel kernel call."""
        return self._enc._parallel(workers)

    def encode_buf(self, buf: np.ndarray, amask: np.ndarray, any_allowed: bool) -> np.ndarray:
        """uint32 ids of the UTF-8 bytes `buf` (added tokens of `amask` matched), one thread."""
        return self._enc._encode_buf(buf, amask, any_allowed)

    def check_disallowed(self, text: str, buf: np.ndarray | None, policy: SpecialPolicy) -> None:
        """Raise DisallowedSpecialTokenError for the first refused string of `policy` in the text."""
        self._enc._check_disallowed(text, buf, policy)

    # the kernels' own path of each call, which a pipeline runs around its own stages
    def encode_kernels(self, text: str, policy: SpecialPolicy, allowed_special, num_threads: int | None):
        return self._enc._encode_kernels(text, policy, allowed_special, num_threads)

    def encode_rows_kernels(self, data, offsets, valid, amask, any_allowed: bool, num_threads: int):
        return self._enc._encode_rows_kernels(data, offsets, valid, amask, any_allowed, num_threads)

    def encode_arrow_kernels(self, array, **kwargs):
        return self._enc._encode_arrow_kernels(array, **kwargs)

    def gather_bytes(self, ids: np.ndarray) -> bytes:
        """The token bytes of valid ids, joined."""
        return self._enc._gather_bytes(ids)


class Encoding:
    """A byte-level BPE tokenizer with tiktoken's methods, compiled to flat tables at construction."""

    def __init__(self, model: ModelDescription | str | None = None, *, name: str | None = None,
                 pat_str: str | None = None, mergeable_ranks: dict[bytes, int] | None = None,
                 special_tokens: dict[str, int] | None = None, explicit_n_vocab: int | None = None,
                 use_cache: bool = True, _recipe: tuple | None = None):
        """`Encoding(description)` from a loader's ModelDescription, or tiktoken's constructor:
        `Encoding(name, pat_str=..., mergeable_ranks=..., special_tokens=..., explicit_n_vocab=None)`
        (e.g. a known encoding's `_pat_str`, `_mergeable_ranks` and `_special_tokens` plus tokens of
        one's own: the same ids as tiktoken's)."""
        if isinstance(model, ModelDescription):
            if name is not None or pat_str is not None or mergeable_ranks is not None or special_tokens is not None:
                raise TypeError("Encoding(description) takes no name, pat_str, mergeable_ranks or special_tokens")
        else:
            if model is not None and name is not None:
                raise TypeError("Encoding() got the name twice")
            name = model if name is None else name
            missing = [a for a, v in (("name", name), ("pat_str", pat_str), ("mergeable_ranks", mergeable_ranks),
                                      ("special_tokens", special_tokens)) if v is None]
            if missing:
                raise TypeError(f"Encoding() takes a ModelDescription, or a name with pat_str, mergeable_ranks "
                                f"and special_tokens; missing: {', '.join(missing)}")
            from .loaders.tiktoken_file import description_from_ranks

            model = description_from_ranks(name, pat_str=pat_str, mergeable_ranks=mergeable_ranks,
                                           special_tokens=special_tokens, explicit_n_vocab=explicit_n_vocab)
            # items in their order: tokens sharing an id decode as the first (o200k_harmony)
            _recipe = _recipe or ("ranks", name, pat_str, mergeable_ranks, tuple(special_tokens.items()),
                                  explicit_n_vocab)
        self._setup(model, None, _recipe or ("description", model, use_cache), use_cache)

    def _setup(self, model: ModelDescription, compiled, recipe: tuple, use_cache: bool = True) -> None:
        """Everything but the tables: per-instance scratch state around shared, read-only tables
        (`compiled`: the tables, or None to build them when first needed)."""
        self._recipe = recipe  # how pickle rebuilds this encoding (tltok_jit.engine.recipe)
        self._model = model
        self._use_cache = use_cache
        self._compiled_tables = compiled
        # While the kernels are not in the cache, a tiktoken rank file or a byte-level tokenizer.json
        # model is served by an exact Python encoder and a background process compiles them (see
        # tltok_jit.compile.background); _interim_stages: the worker's stages every call of this model also needs.
        self._interim = None
        self._interim_checked = 0.0
        hf = getattr(model, "hf", None)  # a tokenizer.json pipeline, or None (rank files)
        interim_hf = _tokenizer_json_modules()[0] if hf is not None else None
        self._interim_stages = ("hf",) if interim_hf is not None and interim_hf.needs_hf_kernels(model) else ()
        # the compile worker's stages this model's calls use (a rank file never needs "hf")
        self.compile_stages: tuple[str, ...] = warm.BASE_STAGES + self._interim_stages
        self.pattern_kind: str | None = model.pattern_kind  # its scanner (patterns.KINDS), None: a Python one
        self._worker_restarted = False
        if compiled is None and warm.background_enabled() and not warm.all_ready(self.compile_stages):
            if interim.supports(model):
                self._interim = interim.InterimEncoder(model)
            elif interim_hf is not None and interim_hf.supports(model):
                self._interim = interim_hf.HFInterimEncoder(model)
        if self._interim is not None:
            warm.start_background(self.pattern_kind, self.compile_stages)
            n_vocab = len(self._interim.by_id)
        else:
            n_vocab = self._compiled.n_vocab
        self.name: str = model.name
        self._pat_str = model.pattern
        self.n_vocab: int = n_vocab
        added = list(model.added_tokens)
        self._special_tokens: dict[str, int] = {t.content: t.id for t in added}
        self._special_values = frozenset(self._special_tokens.values())
        self._added_index: dict[str, int] = {t.content: i for i, t in enumerate(added)}
        n_added = len(added)
        self._no_added = np.zeros(max(n_added, 1), dtype=np.bool_)
        self._no_added.flags.writeable = False  # one array type for every call: one compilation
        self._masks: dict[frozenset, np.ndarray] = {}
        self._sorted_tokens: list[bytes] | None = None  # token_byte_values(), built on first use
        self._policies: dict[tuple[bool, bool], SpecialPolicy] = {}  # see special_policy
        self._local = threading.local()
        # ids / count of a text of up to _HELD_CHARS characters with tiktoken's defaults: the compiled
        # encode_str_call bound to this Encoding's shared call handle (see _install_held_calls)
        self._held_ids = _held_ids_not_ready
        self._held_count = _held_count_not_ready
        # the same with tiktoken's default special-token arguments: the general route's answer
        # (None, -1) for a text that may hold an added token
        self._held_default_ids = _held_ids_not_ready
        self._held_default_count = _held_count_not_ready
        self._held_state = None
        self._parallel_state = None
        self._int_objects = None  # pylist.IntObjects, built by the first long list result
        # decode / decode_bytes of a list or tuple: the compiled decode_list_call bound to this
        # Encoding's decode call handle (see _install_held_decode)
        self._held_text = _held_decode_not_ready
        self._held_bytes = _held_decode_not_ready
        self._held_decode_state = None
        self._decode_handle_of = None  # (id_decode.decode_handle, the arrays it points into)
        self._special_ids = np.array(sorted({t.id for t in added if t.special}), dtype=np.int64)
        # what every call runs: the kernels alone, or a tokenizer.json pipeline (normalizer, Python
        # pretokenizer, post-processor, decoder) around them
        self._pipeline = KernelPipeline(self) if hf is None else _tokenizer_json_modules()[1].HFRuntime(self, hf)
        self._short_path_ok = self._pipeline.kernels_only  # the short-call fast paths (_encode_short)

    # ------------------------------------------------------------------ compiled tables (or not yet)
    @functools.cached_property
    def facade(self) -> KernelFacade:
        """The kernels' side of this Encoding, for the other front ends (see KernelFacade)."""
        return KernelFacade(self)

    @property
    def _compiled(self):
        c = self._compiled_tables
        if c is None:
            if self._interim is not None:
                warm.wait_for("single")  # False: the worker died; compile here
            c = compile_model(self._model, use_cache=self._use_cache)
            if not warm.stage_ready("single"):  # may compile: now rather than in a first long text
                load_text_kernels()  # (in the cache they load when first called: ~20 ms of a start)
            load_scanner(table_config(c.tables).pattern_kind)  # the one scanner this model runs
            self._compiled_tables = c
        return c

    @property
    def _t(self):
        return self._compiled.tables

    @functools.cached_property
    def _valid(self) -> np.ndarray:
        """bool[n_vocab]: the id has bytes (is decodable)."""
        if self._compiled_tables is None and self._interim is not None:
            return np.array([b is not None for b in self._interim.by_id], dtype=np.bool_)
        return self._compiled.valid

    def _stage_ready(self, stage: str) -> bool:
        return warm.stage_ready(stage) and all(warm.stage_ready(s) for s in self._interim_stages)

    def _serve_interim(self, stage: str) -> bool:
        """True: answer this call with the Python encoder (the kernels of `stage` are not ready)."""
        it = self._interim
        if it is None:
            return False
        if self._stage_ready(stage):
            if warm.all_ready(self.compile_stages):
                self._interim = None
            return False
        now = time.monotonic()
        if now - self._interim_checked > 1.0:
            self._interim_checked = now
            if not warm.worker_running() and not self._stage_ready(stage):
                # the worker that ran was started for another model's stages: start one for ours, once
                if not self._worker_restarted:
                    self._worker_restarted = True
                    if warm.start_background(self.pattern_kind, self.compile_stages):
                        return True
                self._interim = None  # no worker left: compile in this process
                return False
        return True

    def _interim_ids(self, text: str, allowed_special: AllowedSpecial,
                     disallowed_special: DisallowedSpecial, add_special_tokens: bool = False) -> list[int]:
        """encode() by the Python encoder, with tiktoken's special-token rules (and, for tokenizer.json
        models, the post-processor's ids around the text with add_special_tokens)."""
        check_text(text)
        policy = self.special_policy(allowed_special, disallowed_special)
        if policy.refused and (m := string_finder(policy.refused).search(text)) is not None:
            raise_disallowed_special_token(m.group())
        ids = self._interim.encode(no_lone_surrogates(text), policy.allowed_tokens)
        if add_special_tokens:
            ids = [*self._pipeline.prefix_ids, *ids, *self._pipeline.suffix_ids]
        return ids

    def _interim_batch(self, texts, allowed_special, disallowed_special,
                       add_special_tokens: bool = False) -> list[list[int]]:
        out = []
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"sequence item {i}: expected str instance, {type(t).__name__} found")
            out.append(self._interim_ids(t, allowed_special, disallowed_special, add_special_tokens))
        return out

    def _interim_column(self, array, allowed_special, disallowed_special, counting: bool, large_list):
        """encode_arrow / count_arrow of a string column by the Python encoder; None when the column
        needs the kernels' path (other types, invalid UTF-8, a disallowed special token: its error
        names the row)."""
        import pyarrow as pa

        from .columns.arrow import as_arrow

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
                    ids = self._interim_ids(t, allowed_special, disallowed_special)
                except ValueError:
                    return None
                n_ids += len(ids)
                since_check += len(t)
                if since_check > _RECHECK_CHARS:  # the kernels may be ready by now: they take the rest
                    since_check = 0
                    if self._stage_ready("arrow"):
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

    @property
    def compile_state(self) -> str:
        """"compiled" (kernels loaded) or "interim" (the Python encoder answers while they compile).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.compile_state
        'compiled'
        """
        return "interim" if self._interim is not None and self._compiled_tables is None else "compiled"

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_tiktoken_file(
        cls,
        path: str | os.PathLike,
        *,
        pattern: str | None = None,
        special_tokens: dict[str, int] | None = None,
        name: str | None = None,
        pattern_kind: str | None = None,
        explicit_n_vocab: int | None = None,
    ) -> "Encoding":
        """Load a `.tiktoken` rank file. `pattern` defaults to the canonical one for `name`."""
        from .loaders.tiktoken_file import read_tiktoken_model
        from .model.patterns import kind_of_pattern
        from .loaders.known_encodings import registry_defaults

        stem = os.path.basename(os.fspath(path)).split(".")[0]
        name = name or stem
        if pattern is None or special_tokens is None:
            d_pattern, d_special = registry_defaults(name)
            pattern = d_pattern if pattern is None else pattern
            special_tokens = d_special if special_tokens is None else special_tokens
        kind = pattern_kind or kind_of_pattern(pattern)
        model = read_tiktoken_model(path, name=name, pattern=pattern, special_tokens=special_tokens,
                                    pattern_kind=kind, explicit_n_vocab=explicit_n_vocab)
        specials = tuple(special_tokens.items())
        return cls(model, _recipe=("tiktoken_file", abspath(path), pattern, specials, name, pattern_kind,
                                   explicit_n_vocab))

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    # ------------------------------------------------------------------ pickle and copy
    def __reduce__(self):
        # by recipe: the other side rebuilds (once per process) instead of receiving the tables
        return rebuild, (self._recipe,)

    def __copy__(self) -> "Encoding":
        new = object.__new__(type(self))
        new._setup(self._model, self._compiled_tables, self._recipe, self._use_cache)  # read-only tables: shared
        return new

    def __deepcopy__(self, memo: dict) -> "Encoding":
        return self.__copy__()

    # ------------------------------------------------------------------ properties
    @property
    def special_tokens_set(self) -> set[str]:
        """The special tokens' texts (tiktoken's attribute).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> sorted(enc.special_tokens_set)
        ['<|endofprompt|>', '<|endoftext|>']
        """
        return set(self._special_tokens)

    @property
    def eot_token(self) -> int:
        """The id of `<|endoftext|>` (KeyError when the model has none).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.eot_token
        199999
        """
        return self._special_tokens["<|endoftext|>"]

    @property
    def max_token_value(self) -> int:
        """The largest id, special tokens included.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.max_token_value
        200018
        """
        return self.n_vocab - 1

    @property
    def unicode_version(self) -> str:
        """The Unicode version of the character classes the split pattern is evaluated with.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.unicode_version
        '16.0.0'
        """
        return self._compiled.unicode_version

    def token_byte_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(bytes, offsets[n_vocab + 1], valid[n_vocab]): token i is bytes[offsets[i]:offsets[i+1]]."""
        return self._t.tok_bytes, self._t.tok_offsets, self._compiled.valid

    def decoder_chain(self):
        """The tokenizer.json decoder chain `decode` runs (`decoder_chain.DecoderChain`), or None when
        decode is the token bytes joined (tiktoken files, byte-level tokenizer.json models)."""
        return self._pipeline.chain

    # ------------------------------------------------------------------ special-token policy
    def _mask(self, allowed: AbstractSet[str]) -> np.ndarray:
        key = frozenset(allowed)
        m = self._masks.get(key)
        if m is None:
            m = self._no_added.copy()
            for s in key:
                i = self._added_index.get(s)
                if i is not None:
                    m[i] = True
            m.flags.writeable = False
            if len(self._masks) < 64:
                self._masks[key] = m
        return m

    def special_policy(self, allowed_special: AllowedSpecial = set(),
                       disallowed_special: DisallowedSpecial = "all") -> SpecialPolicy:
        """The frozen added-token rules for tiktoken's two arguments (the usual ones built once).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> p = enc.special_policy(allowed_special={"<|endoftext|>"})
        >>> p.any_allowed, sorted(p.refused)[:1]
        (True, ['<|endofprompt|>'])
        """
        a_all, d_all = allowed_special == "all", disallowed_special == "all"
        if (a_all or not allowed_special) and (d_all or not disallowed_special):
            # tiktoken's usual arguments ("all" or nothing, each): built once per Encoding
            key = (a_all, d_all)
            p = self._policies.get(key)
            if p is None:
                p = self._policies[key] = build_policy(allowed_special, disallowed_special,
                                                       self._special_tokens.keys(), self._mask)
            return p
        return build_policy(allowed_special, disallowed_special, self._special_tokens.keys(), self._mask)

    def _check_disallowed(self, text: str, buf: np.ndarray, policy: SpecialPolicy) -> None:
        """Raise DisallowedSpecialTokenError for the first refused string in the text (buf: its
        UTF-8 bytes, or None to make them when needed)."""
        if not policy.refused:
            return
        if policy.disallowed is not None:
            if text is not None and not self._may_hold_added(text):
                return
            if buf is None:
                buf = text_to_buf(text)
            pos, idx = K.find_added(buf, 0, len(buf), self._t, policy.disallowed)
            if pos >= 0:
                raise_disallowed_special_token(self._compiled.added[idx].content)
        elif (m := policy.finder.search(text)) is not None:
            raise_disallowed_special_token(m.group())

    def _short_call_policy(self, text: str, allowed_special: AllowedSpecial,
                           disallowed_special: DisallowedSpecial) -> SpecialPolicy | None:
        """The policy of a short call of encode or count, after refusing what it refuses in `text`;
        None for tiktoken's defaults on a text that holds no added token (the usual call)."""
        if allowed_special is _NOTHING_ALLOWED and disallowed_special == "all":
            if not self._may_hold_added(text):
                return None
            policy = self._refuse_all
        else:
            policy = self.special_policy(allowed_special, disallowed_special)
        if policy.refused:
            self._check_disallowed(text, None, policy)
        return policy

    @functools.cached_property
    def _refuse_all(self) -> SpecialPolicy:
        """The policy of tiktoken's default arguments: no special token allowed, every one refused."""
        return self.special_policy()

    @functools.cached_property
    def _added_first_chars(self) -> str | None:
        """The first characters of the added tokens; None when one starts with U+FFFD (a lone
        surrogate in the text becomes U+FFFD before matching, so the text itself would not tell)."""
        firsts = {t[0] for t in self._special_tokens}
        return None if "\ufffd" in firsts else "".join(sorted(firsts))

    @functools.cached_property
    def _added_first_char(self) -> str:
        """The first character of every added token when they share one (`c not in text` then
        proves the text holds none); else "" (in every text: the caller takes its general test)."""
        firsts = self._added_first_chars
        if firsts == "":  # no added token: a lone surrogate, which texts seldom hold (and then lose nothing)
            return "\udfff"
        return firsts if firsts is not None and len(firsts) == 1 else ""

    def _may_hold_added(self, text: str) -> bool:
        """False when `text` cannot contain an added token (none of their first characters is in
        it): the common case, decided without calling a kernel."""
        firsts = self._added_first_chars
        if firsts is None:
            return True
        if len(firsts) == 1:
            return firsts in text
        if len(firsts) <= 8:
            return any(c in text for c in firsts)
        return _char_finder(firsts).search(text) is not None

    # ------------------------------------------------------------------ scratch state
    def _serial_state(self):
        st = getattr(self._local, "state", None)
        if st is None:
            st = (new_cache(1), K.new_work(1))
            self._local.state = st
        return st

    # ------------------------------------------------------------------ encoding one text
    def _serial_handle(self):
        """(this thread's kernels.handle address array, its merge scratch row, its id scratch for
        texts of up to _SCRATCH characters, the address of the call handle of all three and a UTF-8
        scratch, the UTF-8 scratch, the call handle, the int objects its lists hold)."""
        hs = getattr(self._local, "handle", None)
        if hs is None:
            cache, work = self._serial_state()
            h = KH.handle_of(self._t, cache)
            out = np.empty(4 * _SCRATCH, dtype=np.uint32)
            utf8 = np.empty(4 * _SCRATCH, dtype=np.uint8)
            objs = self._int_object_table()
            call = KH.call_handle_of(h, out, work[0], self._no_added, utf8, int_objects=objs.shared_addrs)
            hs = (h, work[0], out, call.ctypes.data, utf8, call, objs)
            self._local.handle = hs
        return hs

    def _install_held_calls(self, entry) -> None:
        """Bind _held_ids, _held_count and their _held_default_ twins to the compiled encode_str_call
        `entry` and one call handle shared by every thread (call_handle_of's `shared`): the kernel
        holds the GIL for the texts it takes with it, so no two calls use its scratch at once, and a
        call skips looking up its thread's handle (~10% of a 20-character call). Made once; the
        arrays live as long as self.

        The _held_default_ calls refuse a text holding the one ASCII character every added token
        starts with in the kernel (it reads the text anyway; `c in text` in Python cost ~10% of a
        20-character call); other added tokens are tested in Python first."""
        with _HELD_INSTALL:
            if self._held_state is not None:
                return
            if _FREE_THREADED:  # no GIL to serialize the shared scratch: every call takes its thread's
                self._held_state = ()
                return
            cache, work = new_cache(1), K.new_work(1)
            h = KH.handle_of(self._t, cache)
            out = np.empty(4 * _HELD_CHARS, dtype=np.uint32)
            utf8 = np.empty(4 * _HELD_CHARS, dtype=np.uint8)
            objs = self._int_object_table()
            first = self._added_first_char  # U+DFFF: no added token
            refused = ord(first) if len(first) == 1 and first.isascii() else -1
            call = KH.call_handle_of(h, out, work[0], self._no_added, utf8, shared=True, int_objects=objs.shared_addrs,
                                     refused=refused)
            self._held_state = (cache, work, h, out, utf8, call, objs)
            slot = take_slot(call.ctypes.data)  # a small int: unboxed faster than the address
            weakref.finalize(self, release_slot, slot)  # before the arrays go, with self
            self._held_ids = functools.partial(entry, slot, KH.AS_LIST)
            self._held_count = functools.partial(entry, slot, 0)
            if refused >= 0 or first == "\udfff":
                self._held_default_ids = functools.partial(entry, slot, KH.AS_LIST | KH.REFUSE_ADDED)
                self._held_default_count = functools.partial(entry, slot, KH.REFUSE_ADDED)
            else:  # (partials of plain functions: no reference back to self)
                self._held_default_ids = functools.partial(_ids_unless_in, first, self._held_ids)
                self._held_default_count = functools.partial(_count_unless_in, first, self._held_count)

    def _encode_short(self, text: str, amask: np.ndarray, any_allowed: bool):
        """(this thread's id scratch, n): the ids of a `text` of at most _SCRATCH characters (ASCII
        when `any_allowed`) are scratch[:n], valid until this thread's next call; n = -1 when the
        text holds a lone surrogate (the caller takes the general route, tiktoken's rule for it).
        No output array is allocated or resized (that cost more than encoding 20 characters).
        Callers test the conditions inline (a str, short, compiled kernels, no tokenizer.json
        pipeline): a method call costs ~10 percent of the whole call."""
        try:
            h, vals, out, call = self._local.handle[:4]
        except AttributeError:
            h, vals, out, call = self._serial_handle()[:4]
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

    def _encode_text(self, text: str, amask: np.ndarray, any_allowed: bool) -> np.ndarray:
        if not text.isascii():  # O(1): CPython keeps the flag
            return self._encode_buf(text_to_buf(text), amask, any_allowed)
        if len(text) <= _SCRATCH:
            out, n = self._encode_short(text, amask, any_allowed)
            return out[:n].copy()
        # the str's own characters, through the same compiled entry as other long texts: a first long
        # ASCII text after non-ASCII ones loaded a kernel of its own from the cache (~2.5 ms of it)
        return self._encode_buf(ascii_view(text), amask, any_allowed)

    def _encode_buf(self, buf: np.ndarray, amask: np.ndarray, any_allowed: bool) -> np.ndarray:
        out = id_buffer(len(buf))
        h, vals = self._serial_handle()[:2]
        args = (buf, h, amask, any_allowed, out, vals)
        entry = _ENCODE_AT_ENTRY[0]
        if entry is None:
            n = KH.encode_text_at(*args)
            _ENCODE_AT_ENTRY[0] = _entry_point(KH.encode_text_at, args)
        else:
            n = entry(*args)
        out.resize(n, refcheck=False)  # shrinks in place; untouched pages were never committed
        return out

    def encode_to_numpy(self, text: str, *, allowed_special: AllowedSpecial = set(),
                        disallowed_special: DisallowedSpecial = "all",
                        add_special_tokens: bool = False, num_threads: int | None = None) -> np.ndarray:
        """Token ids as a uint32 numpy array (no Python int per token).

        num_threads: for a text of 1 MB or more, None (the default) or 0 = every core, N = N cores (cut
        where no piece of the split pattern can cross, through the column path); 1 = one thread.
        A shorter text always takes one. The ids never depend on it.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode_to_numpy("hello world")
        array([24912,  2375], dtype=uint32)
        """
        check_text(text)
        if self._serve_interim("single"):
            return np.array(self._interim_ids(text, allowed_special, disallowed_special, add_special_tokens),
                            dtype=np.uint32)
        policy = self.special_policy(allowed_special, disallowed_special)
        return self._pipeline.encode(text, policy, allowed_special, add_special_tokens, num_threads)

    def _encode_kernels(self, text: str, policy: SpecialPolicy, allowed_special: AllowedSpecial,
                        num_threads: int | None) -> np.ndarray:
        """encode_to_numpy after the special-token policy, by the kernels (KernelPipeline.encode)."""
        self._check_disallowed(text, None, policy)
        amask, any_allowed = policy.allowed, policy.any_allowed
        if num_threads is not None:
            num_threads = check_threads(num_threads)
        # (by default only once every stage is compiled: the split runs the row kernels)
        if (num_threads != 1 and len(text) >= _SPLIT_MIN // 4  # <= 4 bytes a character
                and (num_threads is not None or self._interim is None)):
            ids = self._encode_split(text, allowed_special, num_threads, amask, any_allowed)
            if ids is not None:
                return ids
        return self._encode_text(text, amask, any_allowed)

    def _encode_split(self, text: str, allowed_special: AllowedSpecial, num_threads: int | None,
                      amask: np.ndarray, any_allowed: bool) -> np.ndarray | None:
        """One long text on several cores: cut into one part per thread, each cut the first position
        no pretoken crosses (arrow.find_cuts' rules) after an equal share of the bytes, and the parts
        encoded as rows of one parallel call (their ids, in order, are the text's). None for one
        core, a text of fewer than _SPLIT_MIN bytes, a split pattern without such cuts, or a text
        with too few of them."""
        threads = resolve_threads(num_threads)
        if threads < 2 or (text.isascii() and len(text) < _SPLIT_MIN):
            return None
        T = self._t
        if not pattern_kind(T).column_cuts:
            return None
        allowed = self._special_tokens.keys() if allowed_special == "all" else allowed_special
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
        ids, _ = self.encode_rows(data, offsets, num_threads=len(cuts), amask=amask, any_allowed=any_allowed)
        return ids

    def _window_cut(self, buf: np.ndarray, lo: int, hi: int, first: int, last: int, rule_nl: bool,
                    rule_sp: bool) -> int | None:
        """The first cut (arrow.find_cuts' rules) c of the window buf[lo:hi] with first <= c <= last,
        or None. (The kernel of arrow.find_cuts, called here: importing arrow, and pyarrow with it,
        was half of a first long call.)"""
        T = self._t
        for c in all_cuts(buf, lo, hi, T.stage1, T.stage2, rule_nl, rule_sp).tolist():
            if first <= c <= last:
                return c
        return None

    def _byte_cut(self, data: np.ndarray, target: int, rule_nl: bool, rule_sp: bool) -> int | None:
        """_encode_split's cut search: the first cut at or after byte `target` of the UTF-8 `data`, within
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
        """_encode_split of a Latin-1 text, cut in character space: each worker converts its own part to
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
        T = self._t

        def work_on(w: int) -> None:
            if not str_utf8_into(text, cuts[w], cuts[w + 1], data[base[w]:]):
                declined[0] = True
                return
            fills[w] = K.encode_chunk(data_ro, offsets, valid, 0, w, w + 1, T, amask, any_allowed, out[base[w]:],
                                      counts, cache, w, work[w])

        with PARALLEL_LOCK:
            cache, work = self._parallel(parts)
            on_threads(parts, work_on)
        if declined[0]:
            return None
        return _packed(out, base, fills)

    def encode(self, text: str, *, allowed_special: AllowedSpecial = _NOTHING_ALLOWED,
               disallowed_special: DisallowedSpecial = "all", add_special_tokens: bool = False,
               num_threads: int | None = None) -> list[int]:
        """tiktoken's `encode`: special tokens in `allowed_special` become their ids; any other special
        token found in the text raises ValueError unless `disallowed_special` excludes it.

        Models loaded from a tokenizer.json (`tltok_jit.from_file`): every added token (special or not)
        counts as a "special token" here. Hugging Face `tokenizers` always matches added tokens in
        text, so `encode(text, allowed_special="all")` equals HF's `encode(text,
        add_special_tokens=False).ids`, while the default (and `encode_ordinary`) treats them as plain
        text, as tiktoken does. `add_special_tokens=True` adds what the file's post-processor puts
        around a single sequence (e.g. `<s>`), as HF's default `add_special_tokens=True`; tiktoken
        models have none.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode("hello world")
        [24912, 2375]
        >>> enc.encode("hello <|endoftext|>", allowed_special="all")
        [24912, 220, 199999]
        >>> enc.encode("<|endoftext|>")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tltok_jit.errors.DisallowedSpecialTokenError: Encountered text corresponding to disallowed special token '<|endoftext|>'...
        """
        if (type(text) is str and allowed_special is _NOTHING_ALLOWED and disallowed_special == "all"
                and num_threads is None and not add_special_tokens):  # tiktoken's defaults
            ids = self._held_default_ids(text)  # (None: it may hold an added token, or is long)
            if ids is not None:
                return ids
        if (num_threads is None and not add_special_tokens and type(text) is str and len(text) <= _SCRATCH
                and self._short_path_ok and self._interim is None):  # see _encode_short
            policy = self._short_call_policy(text, allowed_special, disallowed_special)
            entry = _STR_CALL_ENTRY[0]
            if entry is not None and (policy is None or not policy.any_allowed):  # _encode_short, inlined
                if self._held_state is None:
                    self._install_held_calls(entry)
                try:
                    call = self._local.handle
                except AttributeError:
                    call = self._serial_handle()
                ids = entry(call[3], KH.AS_LIST, text)
                if ids is not None:
                    return ids
            elif (policy := policy or self._refuse_all).any_allowed <= text.isascii():
                out, n = self._encode_short(text, policy.allowed, policy.any_allowed)
                if n >= 0:
                    return out[:n].tolist()
        if self._serve_interim("single"):
            return self._interim_ids(text, allowed_special, disallowed_special, add_special_tokens)
        return self._to_list(self.encode_to_numpy(text, allowed_special=allowed_special,
                                                  disallowed_special=disallowed_special,
                                                  add_special_tokens=add_special_tokens, num_threads=num_threads),
                             num_threads)

    def count(self, text: str, *, allowed_special: AllowedSpecial = _NOTHING_ALLOWED,
              disallowed_special: DisallowedSpecial = "all") -> int:
        """`len(encode(text, ...))` without building the list.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.count("hello world")
        2
        """
        if type(text) is str and allowed_special is _NOTHING_ALLOWED and disallowed_special == "all":
            n = self._held_default_count(text)  # tiktoken's defaults (-1: it may hold an added token, or is long)
            if n >= 0:
                return n
        if (type(text) is str and len(text) <= _SCRATCH and self._short_path_ok
                and self._interim is None):  # see _encode_short
            policy = self._short_call_policy(text, allowed_special, disallowed_special)
            entry = _STR_CALL_ENTRY[0]
            if entry is not None and (policy is None or not policy.any_allowed):  # _encode_short, inlined
                if self._held_state is None:
                    self._install_held_calls(entry)
                try:
                    call = self._local.handle
                except AttributeError:
                    call = self._serial_handle()
                n = entry(call[3], 0, text)
                if n >= 0:
                    return n
            elif (policy := policy or self._refuse_all).any_allowed <= text.isascii():
                n = self._encode_short(text, policy.allowed, policy.any_allowed)[1]
                if n >= 0:
                    return n
        if self._serve_interim("single"):
            return len(self._interim_ids(text, allowed_special, disallowed_special))
        return len(self.encode_to_numpy(text, allowed_special=allowed_special, disallowed_special=disallowed_special))

    def encode_ordinary(self, text: str, *, num_threads: int | None = None) -> list[int]:
        """Ids of `text` with special tokens treated as plain text (num_threads: see encode_to_numpy).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode_ordinary("hello <|endoftext|>")[:2]
        [24912, 464]
        """
        if type(text) is str and num_threads is None:  # (the kernel refuses a text of > _HELD_CHARS)
            ids = self._held_ids(text)
            if ids is not None:
                return ids
        if (num_threads is None and type(text) is str and len(text) <= _SCRATCH
                and self._short_path_ok and self._interim is None):  # see _encode_short
            entry = _STR_CALL_ENTRY[0]
            try:
                call = self._local.handle
            except AttributeError:
                call = self._serial_handle()
            # _encode_short, inlined: ~15% of a 20-character call; the kernel makes the list
            if entry is not None:
                if self._held_state is None:
                    self._install_held_calls(entry)
                ids = entry(call[3], KH.AS_LIST, text)
                if ids is not None:
                    return ids
            else:
                out, n = self._encode_short(text, self._no_added, False)
                if n >= 0:
                    return out[:n].tolist()
        if self._serve_interim("single"):
            return self._interim_ids(text, (), ())
        return self._to_list(self.encode_ordinary_to_numpy(text, num_threads=num_threads), num_threads)

    def _to_list(self, ids: np.ndarray, num_threads: int | None = 1) -> list[int]:
        """ids.tolist(), faster for long outputs: a list of prebuilt int objects (one per vocabulary
        id), see pylist.py; a long one filled on the cores `num_threads` allows (resolve_threads)."""
        if len(ids) < 256:
            return ids.tolist()
        return self._int_object_table().to_list(ids, resolve_threads(num_threads))

    def _int_object_table(self) -> IntObjects:
        """The process's immortal int objects (pylist.int_objects; made once, ~20 ms for o200k): long
        list results and the lists of short calls (call_handle_of's int_objects) hold these."""
        objs = self._int_objects
        if objs is None:
            objs = self._int_objects = int_objects(self.n_vocab)
        return objs

    def encode_ordinary_to_numpy(self, text: str, *, num_threads: int | None = None) -> np.ndarray:
        """`encode_ordinary` as a uint32 array.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode_ordinary_to_numpy("hello world")
        array([24912,  2375], dtype=uint32)
        """
        check_text(text)
        if self._serve_interim("single"):
            return np.array(self._interim_ids(text, (), ()), dtype=np.uint32)
        return self._pipeline.encode(text, self.special_policy(set(), ()), (), False, num_threads)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of a text that is exactly one token (special tokens included); KeyError otherwise.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode_single_token("hello"), enc.encode_single_token("<|endoftext|>")
        (24912, 199999)
        """
        if isinstance(text_or_bytes, str):
            if text_or_bytes in self._special_tokens:
                return self._special_tokens[text_or_bytes]
            data = text_or_bytes.encode("utf-8")
        elif isinstance(text_or_bytes, (bytes, bytearray, memoryview)):
            data = bytes(text_or_bytes)
        else:
            raise TypeError(f"text_or_bytes must be a str or bytes, not {type(text_or_bytes).__name__}")
        if self._serve_interim("single"):
            t = self._interim.ranks.get(data)
            if t is None:
                raise KeyError(data)
            return t
        from .kernels.hashing import token_id_of_bytes

        t = token_id_of_bytes(self._t, data)
        if t < 0:
            raise KeyError(data)
        return t

    # ------------------------------------------------------------------ batches
    def _parallel(self, workers: int):
        st = self._parallel_state
        if st is None or st[0].hashes.shape[0] < workers:
            st = (new_cache(workers), K.new_work(workers))
            self._parallel_state = st
        return st

    def encode_rows(self, data: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None = None, *,
                    num_threads: int = 0, amask: np.ndarray | None = None,
                    any_allowed: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Encode rows of a string column (UTF-8 `data`, int64 `offsets`); returns (ids, row offsets).

        The caller guarantees 0 <= offsets[0] <= ... <= offsets[-1] <= len(data) (checked here)."""
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        n_rows = len(offsets) - 1
        if n_rows < 0:
            raise ValueError("offsets must have at least one entry")
        if n_rows and (offsets[0] < 0 or offsets[-1] > len(data) or np.any(np.diff(offsets) < 0)):
            raise ValueError("row offsets are not increasing within the data buffer")
        if valid is None:
            valid = np.ones(n_rows, dtype=np.uint8)
        if amask is None:
            amask = self._no_added
        return self._pipeline.encode_rows(data, offsets, valid, amask, any_allowed, num_threads)

    def _encode_rows_kernels(self, data: np.ndarray, offsets: np.ndarray, valid: np.ndarray, amask: np.ndarray,
                             any_allowed: bool, num_threads: int) -> tuple[np.ndarray, np.ndarray]:
        """encode_rows of checked offsets by the kernels, on up to `num_threads` threads."""
        n_rows = len(offsets) - 1
        total = int(offsets[-1] - offsets[0]) if n_rows else 0
        # ids are written densely (each worker's rows one after another): only the pages they fill
        # are committed, and worker 0's are already in place
        counts = np.empty(n_rows, dtype=np.int64)
        threads = workers_for(max(1, min(resolve_threads(num_threads), n_rows)), total)
        out = id_buffer(total) if threads == 1 else small_pages(np.empty(max(total, 1), dtype=np.uint32))
        if threads == 1:
            cache, work = self._serial_state()
            n = K.encode_chunk(data, offsets, valid, 0, 0, n_rows, self._t, amask, any_allowed, out, counts,
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
                fills[w] = K.encode_chunk(data, offsets, valid, 0, int(bounds[w]), int(bounds[w + 1]), self._t,
                                          amask, any_allowed, out[base[w]:], counts, cache, w, work[w])

            with PARALLEL_LOCK:
                cache, work = self._parallel(threads)
                on_threads(threads, work_on)
            out = _packed(out, base, fills)
        new_offsets = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(counts, out=new_offsets[1:])
        return out, new_offsets

    def _encode_text_rows(self, texts: Sequence[str], data: np.ndarray, offsets: np.ndarray, num_threads: int,
                          amask: np.ndarray, any_allowed: bool) -> tuple[np.ndarray, np.ndarray]:
        """encode_rows of _texts_to_rows(texts): the offsets need no check, and a pipeline that checks
        rows in Python (a normalizer) reads the str it was given instead of decoding the row again."""
        valid = np.ones(len(offsets) - 1, dtype=np.uint8)
        return self._pipeline.encode_rows(data, offsets, valid, amask, any_allowed, num_threads, texts=texts)

    def _texts_to_rows(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
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

    def encode_batch_to_numpy(self, texts: Sequence[str], *, num_threads: int = 0,
                              allowed_special: AllowedSpecial = set(),
                              disallowed_special: DisallowedSpecial = "all",
                              add_special_tokens: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(flat uint32 ids, int64 row offsets) for a list of strings, in parallel.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode_batch_to_numpy(["hello world", "hi"])
        (array([24912,  2375,  3686], dtype=uint32), array([0, 2, 3]))
        """
        texts = texts if isinstance(texts, (list, tuple)) else list(texts)
        if self._serve_interim("rows"):
            rows = self._interim_batch(texts, allowed_special, disallowed_special, add_special_tokens)
            offsets = np.zeros(len(rows) + 1, dtype=np.int64)
            np.cumsum([len(r) for r in rows], out=offsets[1:])
            return np.fromiter((i for r in rows for i in r), dtype=np.uint32, count=int(offsets[-1])), offsets
        data, offsets = self._texts_to_rows(texts)
        policy = self.special_policy(allowed_special, disallowed_special)
        amask, any_allowed = policy.allowed, policy.any_allowed
        if policy.disallowed is not None:  # the first row that has one: what encoding them one by one reports
            r, idx = K.find_added_rows(data, offsets, self._t, policy.disallowed)
            if r >= 0:
                raise_disallowed_special_token(self._compiled.added[idx].content)
        elif policy.finder is not None:
            for t in texts:
                self._check_disallowed(t, None, policy)
        ids, new_offsets = self._encode_text_rows(texts, data, offsets, num_threads, amask, any_allowed)
        if add_special_tokens:
            ids, new_offsets = self._pipeline.add_template(ids, new_offsets)
        return ids, new_offsets

    def _split(self, ids: np.ndarray, offsets: np.ndarray, num_threads: int | None) -> list[list[int]]:
        flat = self._to_list(ids, num_threads)
        o = offsets.tolist()
        return [flat[o[i]:o[i + 1]] for i in range(len(o) - 1)]

    def encode_batch(self, texts: Sequence[str], *, num_threads: int = 0,
                     allowed_special: AllowedSpecial = set(),
                     disallowed_special: DisallowedSpecial = "all",
                     add_special_tokens: bool = False) -> list[list[int]]:
        """`encode` over a list, in parallel (num_threads=0: all cores); same result for any thread count.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode_batch(["hello world", "goodbye"])
        [[24912, 2375], [30744, 43571]]
        """
        if self._serve_interim("rows"):
            return self._interim_batch(texts if isinstance(texts, (list, tuple)) else list(texts),
                                       allowed_special, disallowed_special, add_special_tokens)
        return self._split(*self.encode_batch_to_numpy(texts, num_threads=num_threads,
                                                       allowed_special=allowed_special,
                                                       disallowed_special=disallowed_special,
                                                       add_special_tokens=add_special_tokens), num_threads)

    def encode_ordinary_batch(self, texts: Sequence[str], *, num_threads: int = 0) -> list[list[int]]:
        """`encode_ordinary` over a list, in parallel.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode_ordinary_batch(["hello world", "<|endoftext|>"])
        [[24912, 2375], [27, 91, 419, 1440, 919, 91, 29]]
        """
        if self._serve_interim("rows"):
            return self._interim_batch(texts if isinstance(texts, (list, tuple)) else list(texts), (), ())
        texts = texts if isinstance(texts, (list, tuple)) else list(texts)
        data, offsets = self._texts_to_rows(texts)
        return self._split(*self._encode_text_rows(texts, data, offsets, num_threads, self._no_added, False),
                           num_threads)

    def encode_batch_padded(self, texts, *, max_length: int | None = None, padding: str = "longest",
                            pad_to_multiple_of: int | None = None, padding_side: str = "right",
                            pad_id: int | None = None, truncation: bool = False, truncation_side: str = "right",
                            stride: int = 0, return_overflowing_tokens: bool = False,
                            add_special_tokens: bool = False, allowed_special: AllowedSpecial = set(),
                            disallowed_special: DisallowedSpecial = "all", dtype: str = "int64",
                            num_threads: int | None = None) -> PaddedBatch:
        """A fixed-shape batch (`tltok_jit.padding.PaddedBatch`: `input_ids`, `attention_mask` [B, L],
        `lengths` [B], `overflow_to_sample_mapping`) of a list of str, an Arrow string column or a
        pandas Series; a null row is an error. Truncation and padding follow HF `tokenizers`'
        `encode_batch` with `enable_truncation` / `enable_padding` (rules: `tltok_jit.padding`);
        `add_special_tokens=True` puts the post-processor's template around each row (and counts it
        in `max_length`). `pad_id` is needed when a row is padded. Options are the call's own.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> b = enc.encode_batch_padded(["hello world", "hi"], pad_id=199999)
        >>> b.input_ids
        array([[ 24912,   2375],
               [  3686, 199999]])
        >>> b.attention_mask.tolist(), b.lengths.tolist()
        ([[1, 1], [1, 0]], [2, 1])
        """
        from .padding import encode_batch_padded

        return encode_batch_padded(self, texts, max_length=max_length, padding=padding,
                                   pad_to_multiple_of=pad_to_multiple_of, padding_side=padding_side, pad_id=pad_id,
                                   truncation=truncation, truncation_side=truncation_side, stride=stride,
                                   return_overflowing_tokens=return_overflowing_tokens,
                                   add_special_tokens=add_special_tokens, allowed_special=allowed_special,
                                   disallowed_special=disallowed_special, dtype=dtype, num_threads=num_threads)

    # ------------------------------------------------------------------ decoding
    def _unknown_token(self, i: int) -> UnknownTokenError:
        return UnknownTokenError(f"Invalid token for decoding: {i} (not in the vocabulary of {self.name!r}, "
                                 f"n_vocab={self.n_vocab}" + (", an unassigned id)" if 0 <= i < self.n_vocab else ")"))

    def _ids_array(self, tokens: Iterable[int], arg: str = "tokens") -> np.ndarray:
        ids = token_id_array(tokens, self._unknown_token, arg)
        if len(ids):
            bad = (ids < 0) | (ids >= self.n_vocab)
            if not bad.any():
                bad = ~self._valid[ids]
            if bad.any():
                raise self._unknown_token(int(ids[np.argmax(bad)]))
        return ids

    def _plain_decode(self, skip_special_tokens: bool) -> bool:
        """Whether decode is the token bytes joined (no special token to drop, no decoder chain)."""
        pipe = self._pipeline.pipe
        return ((not skip_special_tokens or not len(self._special_ids))
                and (pipe is None or pipe.decoder is None))

    def _install_held_decode(self) -> None:
        """Bind _held_text and _held_bytes to the compiled decode_list_call and a call handle of this
        Encoding's tables (in a call slot) and a scratch shared by every thread: the kernel holds the
        GIL. Made once, when the kernels are ready; not where the decode is more than the token bytes
        joined or pyints cannot read the int objects."""
        with _HELD_INSTALL:
            if self._held_decode_state is not None:
                return
            pipe = self._pipeline.pipe
            if not pyints.available() or (pipe is not None and pipe.decoder is not None):
                self._held_decode_state = ()
                return
            entry = _DECODE_CALL_ENTRY[0]
            if entry is None:
                entry = _DECODE_CALL_ENTRY[0] = KD.decode_call_entry()
            scratch = np.empty(_DECODE_SCRATCH, dtype=np.uint8)
            call = id_decode.decode_call_handle(self._decode_handle(), scratch)
            self._held_decode_state = (self._decode_handle_of, scratch, call)
            slot = take_slot(call.ctypes.data)
            weakref.finalize(self, release_slot, slot)
            self._held_text = functools.partial(entry, slot, True)
            self._held_bytes = functools.partial(entry, slot, False)

    def _decode_handle(self) -> np.ndarray:
        """id_decode.decode_handle of the tables (which the Encoding keeps alive)."""
        hs = self._decode_handle_of
        if hs is None or hs[1] is not self._t:
            t, valid = self._t, self._valid
            hs = self._decode_handle_of = (id_decode.decode_handle(t.tok_bytes, t.tok_offsets, valid), t, valid)
        return hs[0]

    def _fast_decode_bytes(self, tokens) -> bytes | None:
        """decode_bytes of a plain decode by id_decode, or None for the checked path to answer."""
        kind = type(tokens)
        if kind is list or kind is tuple:
            if self._serve_interim("single"):
                return None
            if self._held_decode_state is None:
                self._install_held_decode()
            data = self._held_bytes(tokens)
            return data if data is not None else id_decode.gather_list(tokens, self._decode_handle())
        elif not isinstance(tokens, (list, tuple, np.ndarray)) or self._serve_interim("single"):
            return None  # an iterator is read once, by the checked path
        t = self._t
        return id_decode.gather(token_id_array(tokens, self._unknown_token), t.tok_bytes, t.tok_offsets,
                                self._valid)

    def decode_bytes(self, tokens: Iterable[int], *, skip_special_tokens: bool = False) -> bytes:
        """The bytes of `tokens`, concatenated (no UTF-8 decoding).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.decode_bytes([24912, 2375])
        b'hello world'
        """
        if not skip_special_tokens:  # a list or tuple of valid ids: one kernel call makes the bytes
            data = self._held_bytes(tokens)
            if data is not None:
                return data
        if self._plain_decode(skip_special_tokens):
            data = self._fast_decode_bytes(tokens)
            if data is not None:
                return data
        # the checked path: reports what the fast path refused
        ids = self._ids_array(tokens)
        if skip_special_tokens and len(self._special_ids) and len(ids):
            ids = ids[~np.isin(ids, self._special_ids)]
        return self._pipeline.decode_bytes(ids)

    def _gather_bytes(self, ids: np.ndarray) -> bytes:
        """The token bytes of valid ids joined (KernelPipeline.decode_bytes)."""
        if self._serve_interim("single"):
            return self._interim.decode_bytes(ids)
        data = id_decode.gather(ids, self._t.tok_bytes, self._t.tok_offsets, self._valid)
        if data is None:
            raise AssertionError("unreachable: _ids_array checked every id")
        return data

    def _fast_decode_bytes_batch(self, batch) -> list[bytes] | None:
        """decode_bytes of each row by one kernel call, or None for the row-by-row path."""
        if self._serve_interim("single"):
            return None
        flat = id_decode.flat_ids(batch)
        if flat is None:
            return None
        t = self._t
        return id_decode.gather_batch(*flat, t.tok_bytes, t.tok_offsets, self._valid)

    def decode(self, tokens: Iterable[int], errors: str = "replace", *, skip_special_tokens: bool = False) -> str:
        """Token ids -> text; with errors="replace", one U+FFFD per maximal ill-formed subsequence.

        skip_special_tokens drops the special tokens (for tokenizer.json models: added tokens with
        `special: true`), as HF's `decode(ids, skip_special_tokens=True)`. Models with a non-byte-level
        decoder (Mistral-7B's Replace/ByteFallback/Fuse/Strip) run HF's decoder chain. Unlike HF, an id
        outside the vocabulary raises instead of being skipped.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.decode([24912, 2375])
        'hello world'
        >>> enc.decode([enc.n_vocab + 10])
        Traceback (most recent call last):
        ...
        tltok_jit.errors.UnknownTokenError: Invalid token for decoding: 200029 (not in the vocabulary of 'o200k_base', n_vocab=200019)
        """
        if not skip_special_tokens and errors == "replace":  # one kernel call makes the text
            text = self._held_text(tokens)
            if text is not None:
                return text
        if self._plain_decode(skip_special_tokens):  # decode_bytes' fast path, one call fewer
            data = self._fast_decode_bytes(tokens)
            if data is not None:
                return data.decode("utf-8", errors)
        # the checked path: reports what the fast paths refused, and runs a decoder chain
        ids = self._ids_array(tokens)
        if skip_special_tokens and len(self._special_ids) and len(ids):
            ids = ids[~np.isin(ids, self._special_ids)]
        return self._pipeline.decode(ids, errors)

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace", num_threads: int = 8,
                     skip_special_tokens: bool = False) -> list[str]:
        """`decode` of each id sequence (num_threads is accepted for tiktoken's signature; decoding a
        row is one kernel call, so it runs serially).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.decode_batch([[24912], [2375]])
        ['hello', ' world']
        """
        check_threads(num_threads)
        if self._plain_decode(skip_special_tokens):
            rows = self._fast_decode_bytes_batch(batch)
            if rows is not None:
                return [r.decode("utf-8", errors=errors) for r in rows]
        return [self.decode(ids, errors, skip_special_tokens=skip_special_tokens) for ids in batch]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int = 8,
                           skip_special_tokens: bool = False) -> list[bytes]:
        """`decode_bytes` of each id sequence.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.decode_bytes_batch([[24912], [2375]])
        [b'hello', b' world']
        """
        check_threads(num_threads)
        if self._plain_decode(skip_special_tokens):
            rows = self._fast_decode_bytes_batch(batch)
            if rows is not None:
                return rows
        return [self.decode_bytes(ids, skip_special_tokens=skip_special_tokens) for ids in batch]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """tiktoken's `decode_with_offsets`: (text, the index in text of the first character each token
        contributes bytes to). Raises UnicodeDecodeError when the ids decode to invalid UTF-8, as
        tiktoken does.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.decode_with_offsets([24912, 2375])
        ('hello world', [0, 5])
        """
        token_bytes = self.decode_tokens_bytes(tokens)
        text_len = 0
        offsets = []
        for token in token_bytes:
            offsets.append(max(0, text_len - (0x80 <= token[0] < 0xC0)))
            text_len += sum(1 for c in token if not 0x80 <= c < 0xC0)
        return b"".join(token_bytes).decode("utf-8", errors="strict"), offsets

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token (UnknownTokenError for an id outside the vocabulary).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.decode_single_token_bytes(2375)
        b' world'
        """
        t = int(self._ids_array([check_int(token, "token")])[0])
        if self._serve_interim("single"):
            return self._interim.by_id[t]
        o = self._t.tok_offsets
        return self._t.tok_bytes[o[t]:o[t + 1]].tobytes()

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """The bytes of each token.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.decode_tokens_bytes([24912, 2375])
        [b'hello', b' world']
        """
        ids = self._ids_array(tokens)
        if self._serve_interim("single"):
            return [self._interim.by_id[t] for t in ids.tolist()]
        o = self._t.tok_offsets
        b = self._t.tok_bytes
        return [b[o[t]:o[t + 1]].tobytes() for t in ids.tolist()]

    def decode_incremental(self, new_ids: Iterable[int], state: dict, *, final: bool = False) -> str:
        """Text added by `new_ids`; `state["text"]` is the deltas joined, decode(all ids so far) except
        an unfinished UTF-8 character, held back until it completes (or `final=True`).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> state = {}
        >>> enc.decode_incremental([24912], state), enc.decode_incremental([2375], state, final=True)
        ('hello', ' world')
        """
        from .streaming.decode import decode_incremental

        return decode_incremental(self, new_ids, state, final=final)

    def token_pieces(self, ids: Iterable[int]) -> list[str]:
        """One string per token with "".join(pieces) == decode(ids); a split character goes to the
        token that completes it.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.token_pieces([24912, 2375])
        ['hello', ' world']
        """
        from .streaming.decode import token_pieces

        return token_pieces(self, ids)

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ordinary (mergeable) token, sorted (as tiktoken returns them).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.token_byte_values()[:3]
        [b'\\x00', b'\\x00\\x00', b'\\x01']
        """
        if self._sorted_tokens is None:
            self._sorted_tokens = sorted(self._model.vocab)
        return list(self._sorted_tokens)

    @property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        """Ordinary token bytes -> rank (= id), tiktoken's attribute; the dict the tables were built from
        (do not modify it)."""
        return self._model.vocab

    def is_special_token(self, token: int) -> bool:
        """True for the id of a special token (for tokenizer.json models: of any added token).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.is_special_token(enc.eot_token), enc.is_special_token(24912)
        (True, False)
        """
        return check_int(token, "token") in self._special_values

    def encode_with_unstable(self, text: str, *, allowed_special: AllowedSpecial = set(),
                             disallowed_special: DisallowedSpecial = "all") -> tuple[list[int], list[list[int]]]:
        """tiktoken's `encode_with_unstable`: (stable ids, completions), the stable ids encoding a prefix
        of `text` and each completion a sequence of ids that the rest could start as. tiktoken returns
        the completions in no defined order; so do we.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> stable, completions = enc.encode_with_unstable("hello wor")
        >>> stable, [286, 3279] in completions
        ([24912], True)
        """
        check_text(text)
        if not self._pipeline.kernels_only:
            raise NotImplementedError("encode_with_unstable is defined for tiktoken-style encodings only")
        allowed = self.special_tokens_set if allowed_special == "all" else set(allowed_special)
        self._check_disallowed(text, text_to_buf(text), self.special_policy(allowed, disallowed_special))
        from .kernels.scan import piece_ends
        from .engine.unstable import encode_with_unstable

        t = self._t
        kind = table_config(t).pattern_kind

        def split(buf: np.ndarray) -> np.ndarray:
            return piece_ends(kind, buf, 0, len(buf), t.stage1, t.stage2)

        if self._sorted_tokens is None:
            self._sorted_tokens = sorted(self._model.vocab)
        return encode_with_unstable(self, text, allowed, split, self._sorted_tokens)

    # ------------------------------------------------------------------ Arrow columns (tltok_jit.columns.arrow)
    def encode_arrow(self, array, *, num_threads: int = 0, allowed_special: AllowedSpecial = set(),
                     disallowed_special: DisallowedSpecial = "all", errors: str = "replace",
                     large_list: bool | None = None, max_length: int | None = None,
                     truncation_side: str = "right"):
        """Token ids of every row of an Arrow string/binary column (Array, ChunkedArray, Table column,
        polars Series, pandas Arrow-backed Series) as `list<uint32>` (`large_list<uint32>` past 2**31 - 1
        ids). Null rows stay null; invalid UTF-8 is encoded as `bytes.decode("utf-8", errors)` would
        give it (errors="replace") or raises naming the row ("strict"). See `tltok_jit.columns.arrow`.
        `max_length` keeps each row's first (`truncation_side="right"`) or last ("left") ids.

        A pandas Series (object, `str` / `string[pyarrow]` or ArrowDtype) gives a pandas Series of
        id lists, None for a null row, with the input's index and name.

        >>> import pyarrow as pa
        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode_arrow(pa.array(["hello world", None, "goodbye"])).to_pylist()
        [[24912, 2375], None, [30744, 43571]]
        >>> enc.encode_arrow(pa.array(["hello world", None, "goodbye"]), max_length=1).to_pylist()
        [[24912], None, [30744]]
        """
        from .columns import arrow

        if max_length is not None or truncation_side != "right":
            from .padding import truncate_lists, truncation_args

            max_length, truncation_side = truncation_args(max_length, truncation_side)  # checked before encoding
        if is_pandas_series(array):
            from .columns.pandas_io import ids_series

            result = self.encode_arrow(arrow.as_arrow(array), num_threads=num_threads,
                                       allowed_special=allowed_special, disallowed_special=disallowed_special,
                                       errors=errors, large_list=large_list, max_length=max_length,
                                       truncation_side=truncation_side)
            return ids_series(result, array, self._to_list)

        out = self._pipeline.encode_arrow(array, num_threads=num_threads, allowed_special=allowed_special,
                                          disallowed_special=disallowed_special, errors=errors,
                                          large_list=large_list, counting=False)
        return out if max_length is None else truncate_lists(out, max_length, truncation_side)

    def _encode_arrow_kernels(self, array, *, num_threads: int, allowed_special: AllowedSpecial,
                              disallowed_special: DisallowedSpecial, errors: str, large_list: bool | None,
                              counting: bool):
        """encode_arrow (counting: count_arrow) by the kernels, or the Python encoder while they compile
        (KernelPipeline.encode_arrow)."""
        from .columns import arrow

        if errors in ("replace", "strict") and self._serve_interim("arrow"):
            out = self._interim_column(array, allowed_special, disallowed_special, counting, large_list)
            if out is not None:
                return out
        if counting:
            return arrow.count_arrow(self, array, num_threads=num_threads, allowed_special=allowed_special,
                                     disallowed_special=disallowed_special, errors=errors)
        return arrow.encode_arrow(self, array, num_threads=num_threads, allowed_special=allowed_special,
                                  disallowed_special=disallowed_special, errors=errors, large_list=large_list)

    def count_arrow(self, array, *, num_threads: int = 0, allowed_special: AllowedSpecial = set(),
                    disallowed_special: DisallowedSpecial = "all", errors: str = "replace"):
        """The number of ids of every row (`int64`, nulls stay null); the ids are never materialized.
        A pandas Series gives an `Int64` Series (<NA> for a null row) with the input's index and name.

        >>> import pyarrow as pa
        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.count_arrow(pa.array(["hello world", None, "goodbye"])).to_pylist()
        [2, None, 2]
        """
        from .columns import arrow

        if is_pandas_series(array):
            from .columns.pandas_io import counts_series

            result = self.count_arrow(arrow.as_arrow(array), num_threads=num_threads,
                                      allowed_special=allowed_special, disallowed_special=disallowed_special,
                                      errors=errors)
            return counts_series(result, array)

        return self._pipeline.encode_arrow(array, num_threads=num_threads, allowed_special=allowed_special,
                                           disallowed_special=disallowed_special, errors=errors,
                                           large_list=None, counting=True)

    def decode_arrow(self, list_array, *, errors: str = "replace", num_threads: int = 0):
        """`list<uint32>` (any list of integer ids) back to `large_string`, one text per row.

        >>> import pyarrow as pa
        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.decode_arrow(pa.array([[24912, 2375], None], pa.list_(pa.uint32()))).to_pylist()
        ['hello world', None]
        """
        return self._pipeline.decode_arrow(list_array, errors, num_threads)

    # ------------------------------------------------------------------ streaming encode
    def stream_encoder(self, *, allowed_special: AllowedSpecial = set(),
                       disallowed_special: DisallowedSpecial = "all"):
        """A `StreamEncoder`: `feed(text)` / `feed_bytes(data)` return the ids no continuation can
        change, `finish()` the rest; all of them together equal `encode(text, ...)`. A disallowed
        special token raises ValueError when the chunk completing it is fed (see
        `tltok_jit.streaming.encode`).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> se = enc.stream_encoder()
        >>> [ids.tolist() for ids in (se.feed("hello wo"), se.feed("rld"), se.finish())]
        [[24912], [], [2375]]
        """
        from .streaming.encode import StreamEncoder

        return StreamEncoder(self, allowed_special=allowed_special, disallowed_special=disallowed_special)


def rebuild(recipe: tuple) -> Encoding:
    """The Encoding `recipe` describes (see recipe.py), built at most once per process: pickle calls
    this, and `tltok_jit.get_encoding` shares its instances with it."""
    return cached(recipe, _build)


def _build(recipe: tuple) -> Encoding:
    kind, args = recipe[0], recipe[1:]
    if kind == "encoding":
        from .loaders.known_encodings import load_description

        (name,) = args
        return Encoding(load_description(name), _recipe=recipe)
    if kind == "hf_json":
        from .loaders.hf_json import read_hf_json

        path, config, name = args
        return Encoding(read_hf_json(path, config, name=name), _recipe=recipe)
    if kind == "gpt2_files":
        from .loaders.gpt2_files import read_gpt2_files

        vocab, merges, name = args
        return Encoding(read_gpt2_files(vocab, merges, name=name), _recipe=recipe)
    if kind == "tiktoken_file":
        path, pattern, specials, name, pattern_kind, n_vocab = args
        return Encoding.from_tiktoken_file(path, pattern=pattern, special_tokens=dict(specials), name=name,
                                           pattern_kind=pattern_kind, explicit_n_vocab=n_vocab)
    if kind == "ranks":
        name, pat_str, ranks, specials, n_vocab = args
        return Encoding(name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=dict(specials),
                        explicit_n_vocab=n_vocab)
    if kind == "description":
        model, use_cache = args
        return Encoding(model, use_cache=use_cache)
    raise ValueError(f"unknown Encoding recipe kind {kind!r}")
