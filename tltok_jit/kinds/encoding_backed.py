"""A Tokenizer over a `tltok_jit.Encoding` whose decode drops a given id set (tiktoken, whisper, huggingface).

`decode_incremental` and `token_pieces` use the Encoding's own streaming forms (`tltok_jit.streaming.decode`:
token bytes appended, or a tokenizer.json decoder chain over a bounded window), which equal its
`decode` and never re-decode the prefix; `encoding_streams=False` falls back to the contract's
re-rendering defaults (needed when `decode_kwargs` make `decode` differ from the Encoding's).

The Arrow column entry points are the Encoding's (`Encoding.encode_arrow`, `count_arrow`,
`decode_arrow`) with the kind's special-token policy; `decode_arrow` drops the same ids as `decode`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..encoding import Encoding, UnknownTokenError
from ..tokenizer import TokenIdError, Tokenizer

__all__ = ["EncodingTokenizer"]

_ROW = re.compile(r"^row (\d+):")


class EncodingTokenizer(Tokenizer):
    """`Encoding` behind the registry contract; `special_ids` are dropped before decoding."""

    def __init__(self, enc: Encoding, special_ids: Iterable[int], *, kind: str, encoding_streams: bool = True,
                 allowed_special: Any = frozenset(), decode_kwargs: dict | None = None,
                 empty_ids: Iterable[int] = ()):
        self.encoding = enc
        self.kind = kind
        self.vocab_size = enc.n_vocab
        self.special_ids = frozenset(special_ids)
        self._special_arr = np.array(sorted(self.special_ids), dtype=np.int64)
        self._encoding_streams = encoding_streams
        self._allowed_special = allowed_special
        self._decode_kwargs = decode_kwargs or {}
        # Ids that render as nothing and that the Encoding does not hold (Whisper's empty rank).
        self._empty_ids = frozenset(empty_ids)
        self._dropped = self.special_ids | self._empty_ids

    def _kept(self, ids, dropped: frozenset[int] | None = None) -> list[int]:
        ids = self.check_ids(ids)
        dropped = self._dropped if dropped is None else dropped
        if dropped:
            ids = [i for i in ids if i not in dropped]
        return ids

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except UnknownTokenError as e:  # an unassigned id inside the vocabulary's range
            raise TokenIdError(str(e)) from None

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode(text, allowed_special=self._allowed_special)

    def decode(self, ids: Sequence[int]) -> str:
        return self._call(self.encoding.decode, self._kept(ids), **self._decode_kwargs)

    def decode_incremental(self, new_ids: Sequence[int], state: dict, *, final: bool = False) -> str:
        if not self._encoding_streams:
            return super().decode_incremental(new_ids, state, final=final)
        return self._call(self.encoding.decode_incremental, self._kept(new_ids), state, final=final)

    def token_pieces(self, ids: Sequence[int]) -> list[str]:
        if not self._encoding_streams:
            return super().token_pieces(ids)
        ids = self.check_ids(ids)
        keep = [n for n, i in enumerate(ids) if i not in self._dropped]
        pieces = [""] * len(ids)
        for n, p in zip(keep, self._call(self.encoding.token_pieces, [ids[n] for n in keep])):
            pieces[n] = p
        return pieces

    # ------------------------------------------------------------------ columns
    def encode_arrow(self, column, *, num_threads: int | None = None, errors: str = "replace",
                     large_list: bool | None = None):
        """`encode` of every row of a text column (`Encoding.encode_arrow` with this kind's policy)."""
        return self.encoding.encode_arrow(column, num_threads=0 if num_threads is None else num_threads,
                                          allowed_special=self._allowed_special, errors=errors,
                                          large_list=large_list)

    def count_arrow(self, column, *, num_threads: int | None = None, errors: str = "replace"):
        """The number of ids of every row (`Encoding.count_arrow` with this kind's policy)."""
        return self.encoding.count_arrow(column, num_threads=0 if num_threads is None else num_threads,
                                         allowed_special=self._allowed_special, errors=errors)

    def decode_arrow(self, column, *, errors: str = "replace", num_threads: int | None = None):
        """`decode` of every row of a list<integer> column: large_string, nulls stay null; the ids
        `decode` drops are dropped, then `Encoding.decode_arrow` (errors as there)."""
        from . import columns as C

        C.check_errors(errors)
        dropped = np.array(sorted(self._dropped), dtype=np.int64)
        threads = 0 if num_threads is None else num_threads

        def decode_chunk(col, row_base: int):
            ids, offsets = col.ids, col.offsets
            if len(dropped):
                keep = ~np.isin(ids, dropped)
                kept = np.zeros(len(keep) + 1, np.int64)
                np.cumsum(keep, out=kept[1:])
                ids, offsets = ids[keep], kept[offsets]
            arr = C.ids_array(ids, offsets, col.valid, large=len(ids) > C.LIST_MAX_IDS)
            try:
                return self.encoding.decode_arrow(arr, errors=errors, num_threads=threads)
            except UnknownTokenError as e:  # an unassigned id inside the vocabulary's range
                raise TokenIdError(_ROW.sub(lambda m: f"row {row_base + int(m.group(1))}:", str(e))) from None
            except ValueError as e:
                row = getattr(e, "row", None)
                if row is None:
                    raise
                raise type(e)(_ROW.sub(lambda m: f"row {row_base + int(m.group(1))}:", str(e)), row_base + row) \
                    from None

        return C.id_columns(column, self.vocab_size, decode_chunk)
