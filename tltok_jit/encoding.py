"""`Encoding`: the public tokenizer object (tiktoken's interface, exact ids, numba kernels)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .compile.serving import PythonServing
from .engine.args import check_int, check_text, check_threads, token_id_array
from .engine.core import NOTHING_ALLOWED as _NOTHING_ALLOWED
from .engine.core import SCRATCH as _SCRATCH
from .engine.core import Engine
from .errors import DisallowedSpecialTokenError, UnknownTokenError, raise_disallowed_special_token  # noqa: F401
from .model.description import ModelDescription
from .columns.pandas_io import is_pandas_series
from .engine.kernel_pipeline import KernelPipeline
from .engine.recipe import abspath, cached
from .engine.special_policy import AllowedSpecial, DisallowedSpecial, SpecialPolicy
from .engine.text import text_to_buf

if TYPE_CHECKING:  # the call imports tltok_jit.padding when it runs
    from .padding import PaddedBatch


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
        """Everything but the tables: an engine of per-instance scratch state around shared, read-only
        tables (`compiled`: the tables, or None to build them when first needed)."""
        self._recipe = recipe  # how pickle rebuilds this encoding (tltok_jit.engine.recipe)
        self._model = model
        self._use_cache = use_cache
        # While the kernels are not in the cache, a tiktoken rank file or a byte-level tokenizer.json
        # model is served by an exact Python encoder and a background process compiles them (see
        # tltok_jit.compile.serving)
        serving = self._serving = PythonServing(model, compiled is not None)
        self.compile_stages: tuple[str, ...] = serving.compile_stages  # the compile worker's stages of its calls
        self.pattern_kind: str | None = model.pattern_kind  # its scanner (patterns.KINDS), None: a Python one
        # the kernel side: tables, entry points, workspaces, call handles (see engine.core)
        engine = self.engine = Engine(model, compiled, serving, use_cache=use_cache)
        n_vocab = len(serving.encoder.by_id) if serving.encoder is not None else engine.compiled.n_vocab
        self.name: str = model.name
        self._pat_str = model.pattern
        self.n_vocab: int = n_vocab
        engine.n_vocab = n_vocab
        self._special_tokens: dict[str, int] = engine.special_tokens
        self._special_values = frozenset(self._special_tokens.values())
        self._sorted_tokens: list[bytes] | None = None  # token_byte_values(), built on first use
        # what every call runs: the kernels alone, or a tokenizer.json pipeline (normalizer, Python
        # pretokenizer, post-processor, decoder) around them
        hf = getattr(model, "hf", None)  # a tokenizer.json pipeline, or None (rank files)
        if hf is None:
            self._pipeline = KernelPipeline(self, engine)
        else:  # imported here: a process that uses only rank files never loads the tokenizer.json pipeline
            from .hf.runtime import HFRuntime

            self._pipeline = HFRuntime(self, engine, hf)
        engine.pipeline = self._pipeline
        self._short_path_ok = self._pipeline.kernels_only  # the short-call path (Engine.short)
        # what the calls use of the engine, bound once (an attribute read less on a short call)
        self._short = engine.short
        self._to_list = engine.to_list
        self._fast_decode_bytes = engine.fast_decode_bytes
        self._serve = serving.serve
        engine.on_bind = self._bind_held
        self._bind_held(engine)

    def _bind_held(self, engine: Engine) -> None:
        """The engine's held calls as this Encoding's attributes (again whenever the engine binds them):
        ids / count of a short text with tiktoken's defaults, decode of a list or tuple."""
        self._held_ids, self._held_count = engine.held_ids, engine.held_count
        self._held_default_ids, self._held_default_count = engine.held_default_ids, engine.held_default_count
        self._held_text, self._held_bytes = engine.held_text, engine.held_bytes

    # ------------------------------------------------------------------ compiled tables (or not yet)
    @property
    def compile_state(self) -> str:
        """"compiled" (kernels loaded) or "interim" (the Python encoder answers while they compile).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.compile_state
        'compiled'
        """
        return "interim" if self._serving.encoder is not None and self.engine.compiled_or_none is None else "compiled"

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
        # read-only tables: shared (a new engine: its own scratch state and call handles)
        new._setup(self._model, self.engine.compiled_or_none, self._recipe, self._use_cache)
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
        return self.engine.compiled.unicode_version

    def token_byte_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(bytes, offsets[n_vocab + 1], valid[n_vocab]): token i is bytes[offsets[i]:offsets[i+1]]."""
        t = self.engine.tables
        return t.tok_bytes, t.tok_offsets, self.engine.compiled.valid

    def decoder_chain(self):
        """The tokenizer.json decoder chain `decode` runs (`decoder_chain.DecoderChain`), or None when
        decode is the token bytes joined (tiktoken files, byte-level tokenizer.json models)."""
        return self._pipeline.chain

    # ------------------------------------------------------------------ special-token policy
    def special_policy(self, allowed_special: AllowedSpecial = set(),
                       disallowed_special: DisallowedSpecial = "all") -> SpecialPolicy:
        """The frozen added-token rules for tiktoken's two arguments (the usual ones built once).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> p = enc.special_policy(allowed_special={"<|endoftext|>"})
        >>> p.any_allowed, sorted(p.refused)[:1]
        (True, ['<|endofprompt|>'])
        """
        return self.engine.special_policy(allowed_special, disallowed_special)

    # ------------------------------------------------------------------ encoding one text
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
        if self._serve("single"):
            return np.array(self.engine.interim_ids(text, allowed_special, disallowed_special, add_special_tokens),
                            dtype=np.uint32)
        policy = self.engine.special_policy(allowed_special, disallowed_special)
        return self._pipeline.encode(text, policy, allowed_special, add_special_tokens, num_threads)

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
                and self._short_path_ok):
            ids = self._short(text, allowed_special, disallowed_special, True)
            if ids is not None:
                return ids
        if self._serve("single"):
            return self.engine.interim_ids(text, allowed_special, disallowed_special, add_special_tokens)
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
        if type(text) is str and len(text) <= _SCRATCH and self._short_path_ok:
            n = self._short(text, allowed_special, disallowed_special, False)
            if n is not None:
                return n
        if self._serve("single"):
            return len(self.engine.interim_ids(text, allowed_special, disallowed_special))
        return len(self.encode_to_numpy(text, allowed_special=allowed_special, disallowed_special=disallowed_special))

    def encode_ordinary(self, text: str, *, num_threads: int | None = None) -> list[int]:
        """Ids of `text` with special tokens treated as plain text (num_threads: see encode_to_numpy).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode_ordinary("hello <|endoftext|>")[:2]
        [24912, 464]
        """
        if type(text) is str and num_threads is None:  # (the kernel refuses a long text)
            ids = self._held_ids(text)
            if ids is not None:
                return ids
        if num_threads is None and type(text) is str and len(text) <= _SCRATCH and self._short_path_ok:
            ids = self._short(text, None, None, True)
            if ids is not None:
                return ids
        if self._serve("single"):
            return self.engine.interim_ids(text, (), ())
        return self._to_list(self.encode_ordinary_to_numpy(text, num_threads=num_threads), num_threads)

    def encode_ordinary_to_numpy(self, text: str, *, num_threads: int | None = None) -> np.ndarray:
        """`encode_ordinary` as a uint32 array.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode_ordinary_to_numpy("hello world")
        array([24912,  2375], dtype=uint32)
        """
        check_text(text)
        if self._serve("single"):
            return np.array(self.engine.interim_ids(text, (), ()), dtype=np.uint32)
        return self._pipeline.encode(text, self.engine.special_policy(set(), ()), (), False, num_threads)

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
        t = self.engine.token_id_of_bytes(data)
        if t < 0:
            raise KeyError(data)
        return t

    # ------------------------------------------------------------------ batches
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
            amask = self.engine.no_added
        return self._pipeline.encode_rows(data, offsets, valid, amask, any_allowed, num_threads)

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
        engine = self.engine
        if self._serve("rows"):
            rows = engine.interim_batch(texts, allowed_special, disallowed_special, add_special_tokens)
            offsets = np.zeros(len(rows) + 1, dtype=np.int64)
            np.cumsum([len(r) for r in rows], out=offsets[1:])
            return np.fromiter((i for r in rows for i in r), dtype=np.uint32, count=int(offsets[-1])), offsets
        data, offsets = engine.texts_to_rows(texts)
        policy = engine.special_policy(allowed_special, disallowed_special)
        engine.check_disallowed_rows(texts, data, offsets, policy)
        ids, new_offsets = engine.encode_text_rows(texts, data, offsets, num_threads, policy.allowed, policy.any_allowed)
        if add_special_tokens:
            ids, new_offsets = self._pipeline.add_template(ids, new_offsets)
        return ids, new_offsets

    def encode_batch(self, texts: Sequence[str], *, num_threads: int = 0,
                     allowed_special: AllowedSpecial = set(),
                     disallowed_special: DisallowedSpecial = "all",
                     add_special_tokens: bool = False) -> list[list[int]]:
        """`encode` over a list, in parallel (num_threads=0: all cores); same result for any thread count.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode_batch(["hello world", "goodbye"])
        [[24912, 2375], [30744, 43571]]
        """
        if self._serve("rows"):
            return self.engine.interim_batch(texts, allowed_special, disallowed_special, add_special_tokens)
        return self.engine.split_list(*self.encode_batch_to_numpy(texts, num_threads=num_threads,
                                                                  allowed_special=allowed_special,
                                                                  disallowed_special=disallowed_special,
                                                                  add_special_tokens=add_special_tokens), num_threads)

    def encode_ordinary_batch(self, texts: Sequence[str], *, num_threads: int = 0) -> list[list[int]]:
        """`encode_ordinary` over a list, in parallel.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.encode_ordinary_batch(["hello world", "<|endoftext|>"])
        [[24912, 2375], [27, 91, 419, 1440, 919, 91, 29]]
        """
        engine = self.engine
        if self._serve("rows"):
            return engine.interim_batch(texts, (), ())
        texts = texts if isinstance(texts, (list, tuple)) else list(texts)
        data, offsets = engine.texts_to_rows(texts)
        return engine.split_list(*engine.encode_text_rows(texts, data, offsets, num_threads, engine.no_added, False),
                                 num_threads)

    def encode_batch_padded(self, texts, pairs=None, *, max_length: int | None = None,
                            padding: str | None = None, pad_to_multiple_of: int | None = None,
                            padding_side: str | None = None, pad_id: int | None = None,
                            pad_type_id: int | None = None, truncation: bool | str | None = None,
                            truncation_side: str | None = None, stride: int | None = None,
                            return_overflowing_tokens: bool = False, add_special_tokens: bool = False,
                            allowed_special: AllowedSpecial = set(), disallowed_special: DisallowedSpecial = "all",
                            dtype: str = "int64", num_threads: int | None = None) -> PaddedBatch:
        """A fixed-shape batch (`tltok_jit.padding.PaddedBatch`: `input_ids`, `attention_mask` [B, L],
        `lengths` [B], `overflow_to_sample_mapping`, `token_type_ids`) of a list of str, an Arrow
        string column or a pandas Series (and, with `pairs`, of each text with its pair); a null row
        is an error. Truncation and padding follow HF `tokenizers`' `encode_batch` with
        `enable_truncation` / `enable_padding` (rules: `tltok_jit.padding`); a tokenizer.json's own
        `truncation` / `padding` apply where the call gives none. `add_special_tokens=True` puts the
        post-processor's template around each row (and counts it in `max_length`). `pad_id` is needed
        when a row is padded and the file names none. Options are the call's own.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> b = enc.encode_batch_padded(["hello world", "hi"], pad_id=199999)
        >>> b.input_ids
        array([[ 24912,   2375],
               [  3686, 199999]])
        >>> b.attention_mask.tolist(), b.lengths.tolist()
        ([[1, 1], [1, 0]], [2, 1])
        >>> enc.encode_batch_padded(["hello"], ["world"]).token_type_ids.tolist()
        [[0, 1]]
        """
        from .padding import encode_batch_padded

        return encode_batch_padded(self, texts, pairs, max_length=max_length, padding=padding,
                                   pad_to_multiple_of=pad_to_multiple_of, padding_side=padding_side, pad_id=pad_id,
                                   pad_type_id=pad_type_id, truncation=truncation, truncation_side=truncation_side,
                                   stride=stride, return_overflowing_tokens=return_overflowing_tokens,
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
                bad = ~self.engine.valid[ids]
            if bad.any():
                raise self._unknown_token(int(ids[np.argmax(bad)]))
        return ids

    def _checked_ids(self, tokens: Iterable[int], skip_special_tokens: bool) -> np.ndarray:
        """The ids of `tokens`, every one checked (UnknownTokenError), the special ones dropped with
        skip_special_tokens."""
        ids = self._ids_array(tokens)
        special = self.engine.special_ids
        if skip_special_tokens and len(special) and len(ids):
            ids = ids[~np.isin(ids, special)]
        return ids

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
        if self.engine.plain_decode(skip_special_tokens):
            data = self._fast_decode_bytes(tokens, self._unknown_token)
            if data is not None:
                return data
        # the checked path: reports what the fast path refused
        return self._pipeline.decode_bytes(self._checked_ids(tokens, skip_special_tokens))

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
        if self.engine.plain_decode(skip_special_tokens):  # decode_bytes' fast path, one call fewer
            data = self._fast_decode_bytes(tokens, self._unknown_token)
            if data is not None:
                return data.decode("utf-8", errors)
        # the checked path: reports what the fast paths refused, and runs a decoder chain
        return self._pipeline.decode(self._checked_ids(tokens, skip_special_tokens), errors)

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace", num_threads: int = 8,
                     skip_special_tokens: bool = False) -> list[str]:
        """`decode` of each id sequence (num_threads is accepted for tiktoken's signature; decoding a
        row is one kernel call, so it runs serially).

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.decode_batch([[24912], [2375]])
        ['hello', ' world']
        """
        check_threads(num_threads)
        if self.engine.plain_decode(skip_special_tokens):
            rows = self.engine.fast_decode_bytes_batch(batch)
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
        if self.engine.plain_decode(skip_special_tokens):
            rows = self.engine.fast_decode_bytes_batch(batch)
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
        return self.engine.token_bytes((t,))[0]

    def decode_tokens_bytes(self, tokens: Iterable[int]) -> list[bytes]:
        """The bytes of each token.

        >>> enc = tltok_jit.get_encoding("o200k_base")
        >>> enc.decode_tokens_bytes([24912, 2375])
        [b'hello', b' world']
        """
        return self.engine.token_bytes(self._ids_array(tokens).tolist())

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
        self.engine.check_disallowed(text, text_to_buf(text), self.special_policy(allowed, disallowed_special))
        from .engine.unstable import encode_with_unstable

        if self._sorted_tokens is None:
            self._sorted_tokens = sorted(self._model.vocab)
        return encode_with_unstable(self, text, allowed, self.engine.piece_ends, self._sorted_tokens)

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
