"""A Tokenizer over a `tltok_jit.Encoding` whose decode drops a given id set (tiktoken, whisper, huggingface).

`decode_incremental` and `token_pieces` use the Encoding's own streaming forms (`tltok_jit.stream`:
token bytes appended, or a tokenizer.json decoder chain over a bounded window), which equal its
`decode` and never re-decode the prefix; `encoding_streams=False` falls back to the contract's
re-rendering defaults (needed when `decode_kwargs` make `decode` differ from the Encoding's).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..encoding import Encoding, UnknownTokenError
from ..tokenizer import TokenIdError, Tokenizer

__all__ = ["EncodingTokenizer"]


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
