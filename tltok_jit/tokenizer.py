"""The tokenizer contract every registry kind implements, its errors and its spec.

A `Tokenizer` turns ids into text (every kind) and text into ids (kinds with `supports_encode`).
`special_ids` is exactly the set `decode` drops. Two methods answer `decode` in pieces and must
agree with it:

* `decode_incremental(new_ids, state)`: returns the text the new ids settle; after every call
  `state["text"]` is the deltas joined, a prefix of `decode(all ids so far)` that later ids never
  change. What is held back is a trailing incomplete character (its U+FFFD), or, for kinds whose
  rendering of the last tokens still depends on the next ones, that unsettled tail. `final=True`
  flushes it, after which `state["text"] == decode(all ids)` exactly.
* `token_pieces(ids)`: one string per id, `"".join(token_pieces(ids)) == decode(ids)`; a character
  split across ids goes to the id completing it, an incomplete tail is flushed onto the last id.

The defaults here re-render the accumulated ids (quadratic in their number); kinds override them
when their rendering allows something cheaper, never with different results.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import (  # noqa: F401  (the registry's errors, re-exported here)
    EncodeNotSupportedError,
    TokenIdError,
    TokenizerAssetError,
    TokenizerError,
    UnknownTokenizerKindError,
)
from .engine.text import common_prefix_len

__all__ = [
    "EncodeNotSupportedError",
    "FFFD",
    "TokenIdError",
    "Tokenizer",
    "TokenizerAssetError",
    "TokenizerError",
    "TokenizerSpec",
    "UnknownTokenizerKindError",
    "WindowedIncremental",
    "as_id_list",
    "common_prefix",
]

FFFD = "\ufffd"


@dataclass(frozen=True)
class TokenizerSpec:
    """Which tokenizer to build: a registered `kind`, its asset files (asset key -> path) and options."""

    kind: str
    files: Mapping[str, str | os.PathLike] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)

    def asset(self, key: str, *, required: bool = True) -> str | None:
        """The path of asset `key`, checked to exist; None when absent and not required."""
        path = self.files.get(key)
        if path is None:
            if required:
                raise TokenizerAssetError(
                    f"tokenizer kind {self.kind!r} needs the asset {key!r}; the spec gives {sorted(self.files)}")
            return None
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise TokenizerAssetError(f"tokenizer kind {self.kind!r}: asset {key!r} not found: {path}")
        return path


def as_id_list(ids: Any, vocab_size: int) -> list[int]:
    """`ids` (a sequence or 1-d integer array) as a list of ints, each in [0, vocab_size)."""
    if isinstance(ids, np.ndarray):
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            raise TokenIdError(f"token ids must be a 1-d integer array, got {ids.dtype} of shape {ids.shape}")
        out = ids.tolist()
    else:
        out = list(ids)
        for pos, i in enumerate(out):
            if type(i) is not int:
                if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
                    raise TokenIdError(f"token id at position {pos} is not an integer: {i!r}")
                out[pos] = int(i)
    if out:
        lo, hi = min(out), max(out)
        if lo < 0 or hi >= vocab_size:
            pos, bad = next((p, i) for p, i in enumerate(out) if i < 0 or i >= vocab_size)
            raise TokenIdError(f"token id {bad} at position {pos} is out of range (vocab_size={vocab_size})")
    return out


def common_prefix(a: str, b: str) -> str:
    """The longest common prefix of two strings."""
    return a[:common_prefix_len(a, b)]


class Tokenizer(abc.ABC):
    """One tokenizer kind behind the registry contract (see the module docstring)."""

    kind: str = ""
    vocab_size: int
    special_ids: frozenset[int]
    supports_encode: bool = True

    # ------------------------------------------------------------------ the two directions
    @abc.abstractmethod
    def decode(self, ids: Sequence[int]) -> str:
        """Ids -> text, dropping `special_ids`."""

    @abc.abstractmethod
    def encode(self, text: str) -> list[int]:
        """Text -> ids; decode-only kinds raise `EncodeNotSupportedError`."""

    # Arrow columns: every built-in kind has `encode_arrow(column, *, num_threads=None,
    # errors="replace", large_list=None)`, `count_arrow(column, *, num_threads=None, errors="replace")`
    # and `decode_arrow(column, *, errors="replace", num_threads=None)`; `kinds.row_columns.RowColumns`
    # gives a kind of one's own the row-at-a-time versions. These defaults name what is missing.
    def encode_arrow(self, column, **kwargs):
        """`encode` of every row of an Arrow text column as list<uint32> (nulls stay null)."""
        if not self.supports_encode:
            raise EncodeNotSupportedError(f"tokenizer kind {self.kind!r} is decode-only: it has no encode_arrow")
        raise NotImplementedError(f"tokenizer kind {self.kind!r} has no encode_arrow (mix in RowColumns)")

    def count_arrow(self, column, **kwargs):
        """The number of ids of every row of an Arrow text column (int64, nulls stay null)."""
        if not self.supports_encode:
            raise EncodeNotSupportedError(f"tokenizer kind {self.kind!r} is decode-only: it has no count_arrow")
        raise NotImplementedError(f"tokenizer kind {self.kind!r} has no count_arrow (mix in RowColumns)")

    def decode_arrow(self, column, **kwargs):
        """`decode` of every row of an Arrow list<integer> column (large_string, nulls stay null)."""
        raise NotImplementedError(f"tokenizer kind {self.kind!r} has no decode_arrow (mix in RowColumns)")

    def encode_batch_padded(self, texts, *, max_length: int | None = None, padding: str = "longest",
                            pad_to_multiple_of: int | None = None, padding_side: str = "right",
                            pad_id: int | None = None, truncation: bool = False, truncation_side: str = "right",
                            stride: int = 0, return_overflowing_tokens: bool = False, dtype="int64",
                            num_threads: int | None = None):
        """`encode` of each text (a list of str, or an Arrow / pandas text column) as a fixed-shape
        `tltok_jit.padding.PaddedBatch`; the options are `Encoding.encode_batch_padded`'s (HF
        `tokenizers`' `enable_truncation` / `enable_padding`). A null row is an error naming it."""
        import pyarrow as pa

        from .padding import pad_rows

        if isinstance(texts, str):
            raise TypeError("encode_batch_padded takes a batch of texts, not one str")
        columnar = any(hasattr(texts, a) for a in ("__arrow_c_array__", "__arrow_c_stream__", "to_numpy"))
        col = self.encode_arrow(texts if columnar else pa.array(list(texts), pa.string()), num_threads=num_threads,
                                large_list=True)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if not isinstance(col, pa.Array):  # a pandas Series in gives a Series out
            col = pa.array(col, pa.large_list(pa.uint32()))
        if col.null_count:
            from .errors import PaddingError

            row = int(np.flatnonzero(np.asarray(col.is_null()))[0])
            raise PaddingError(f"row {row} is null: a padded batch needs a text in every row", "texts", row)
        # offsets index the whole values buffer, also for a sliced column
        return pad_rows(np.asarray(col.values, dtype=np.uint32), np.asarray(col.offsets, dtype=np.int64),
                        n_vocab=self.vocab_size, max_length=max_length, padding=padding,
                        pad_to_multiple_of=pad_to_multiple_of, padding_side=padding_side, pad_id=pad_id,
                        truncation=truncation, truncation_side=truncation_side, stride=stride,
                        return_overflowing_tokens=return_overflowing_tokens, dtype=dtype, num_threads=num_threads)

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        """`decode` of each id sequence."""
        return [self.decode(ids) for ids in batch]

    def check_ids(self, ids: Any) -> list[int]:
        """`ids` as a list of ints in the vocabulary; raises `TokenIdError` otherwise."""
        return as_id_list(ids, self.vocab_size)

    # ------------------------------------------------------------------ decode in pieces
    def unsettled_count(self, ids: Sequence[int]) -> int:
        """How many trailing ids of `ids` may still render differently once more ids follow (beyond
        a trailing incomplete character, which is always held back). Kinds whose rendering is
        prefix-stable keep the default 0."""
        return 0

    def decode_incremental(self, new_ids: Sequence[int], state: dict, *, final: bool = False) -> str:
        """The text `new_ids` add after the ids already folded into `state` (start with `{}`).

        `state["text"]` is the deltas joined: decode(all ids so far) without the held-back tail.
        Keys of `state` other than "text" are private to the kind."""
        new = self.check_ids(new_ids)
        all_ids = state.get("_ids", [])
        all_ids = all_ids + new
        text = self.decode(all_ids)
        emitted = state.get("_emitted", "")
        if final:
            settled = text
        else:
            k = min(self.unsettled_count(all_ids), len(all_ids))
            settled = text if k == 0 else common_prefix(self.decode(all_ids[:len(all_ids) - k]), text)
            settled = settled.rstrip(FFFD)
        if not settled.startswith(emitted):  # a kind whose unsettled_count is too small
            raise AssertionError(f"{type(self).__name__}: settled text {settled!r} revises the emitted {emitted!r}")
        delta = settled[len(emitted):]
        state["_ids"] = all_ids
        state["_emitted"] = settled
        state["text"] = settled
        return delta

    def token_pieces(self, ids: Sequence[int]) -> list[str]:
        """One string per id, concatenating to `decode(ids)`."""
        ids = self.check_ids(ids)
        state: dict = {}
        return [self.decode_incremental([t], state, final=(n == len(ids) - 1)) for n, t in enumerate(ids)]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} kind={self.kind!r} vocab_size={self.vocab_size}>"


class WindowedIncremental:
    """`decode_incremental` over a bounded window of recent ids (mixed into a Tokenizer).

    The window is a primer of the last `primer_len` settled ids plus the ids not settled yet; a
    step decodes the window and takes what follows the primer's text, so a partial costs the same at
    any transcript length. The primer carries the rules that depend on what came before (a leading
    space stripped once, a byte run in progress). The kind's `unsettled_count` and a trailing
    U+FFFD hold text back as in the default; `state["text"]` is the emitted text."""

    primer_len = 4

    def window_can_restart(self, ids) -> bool:
        """Whether the ids before the last `primer_len` of the (settled) window `ids` can be
        forgotten: the kind's rendering of what follows depends on nothing before the primer."""
        return True

    def decode_incremental(self, new_ids, state: dict, *, final: bool = False) -> str:
        new = self.check_ids(new_ids)
        win = state.get("_win", []) + new
        read = state.get("_read", 0)
        shown = state.get("_shown", 0)     # how much of the window's text after the primer is in `done`
        primer_text = self.decode(win[:read])
        text = self.decode(win)[len(primer_text):]
        k = 0
        if final:
            settled = text
        else:
            k = min(self.unsettled_count(win), len(win) - read)
            settled = text if k == 0 else common_prefix(self.decode(win[:len(win) - k])[len(primer_text):], text)
            settled = settled.rstrip(FFFD)
        delta = settled[shown:]
        done = state.pop("text", "")  # the text emitted so far; popped, so `+=` extends it in place
        done += delta
        state["text"] = done
        if k == 0 and len(settled) == len(text) and self.window_can_restart(win):
            # all settled: the window shrinks to a primer
            state["_win"] = win[-self.primer_len:]
            state["_read"] = len(state["_win"])
            state["_shown"] = 0
        else:
            state["_win"] = win
            state["_read"] = read
            state["_shown"] = len(settled)
        return delta
