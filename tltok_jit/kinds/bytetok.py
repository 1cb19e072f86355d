"""The byte tokenizer: 256 ids, the id of a byte is its value, nothing to load.

It has the tiktoken `Encoding` surface that makes sense without merges or special tokens, plus
the streaming methods (`decode_incremental`, `token_pieces`) shared with `Encoding` through
`tltok_jit.streaming.decode`.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from ..streaming import decode as _stream
from ..errors import UnknownTokenError

_N = 256


def _bad(token_id) -> UnknownTokenError:
    return UnknownTokenError(f"token id {token_id} is out of range (vocabulary size {_N})")


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # lone surrogates become U+FFFD, as tiktoken does
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


class ByteTokenizer:
    """id == byte value; 256 ids; no special tokens."""

    name = "bytes"
    n_vocab = _N
    max_token_value = _N - 1
    eot_token = None
    special_tokens_set: frozenset = frozenset()

    _TABLE = None

    def __repr__(self) -> str:
        return "<ByteTokenizer 'bytes'>"

    # ----------------------------------------------------------------- encode
    def encode_ordinary(self, text: str) -> list[int]:
        return list(_utf8(text))

    def encode(self, text: str, *, allowed_special=frozenset(), disallowed_special="all") -> list[int]:
        # there are no special tokens: nothing to allow or refuse
        return list(_utf8(text))

    def encode_to_numpy(self, text: str, *, allowed_special=frozenset(), disallowed_special="all") -> np.ndarray:
        return np.frombuffer(_utf8(text), dtype=np.uint8).astype(np.uint32)

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = 8) -> list[list[int]]:
        return [list(_utf8(t)) for t in text]

    def encode_batch(self, text: Sequence[str], *, num_threads: int = 8, allowed_special=frozenset(),
                     disallowed_special="all") -> list[list[int]]:
        return [list(_utf8(t)) for t in text]

    # ----------------------------------------------------------------- decode
    def decode_bytes(self, tokens) -> bytes:
        if isinstance(tokens, np.ndarray):
            if tokens.ndim != 1 or tokens.dtype.kind not in "iub":
                raise TypeError(f"token ids must be a 1-d integer array, got {tokens.dtype} {tokens.shape}")
            if tokens.size:
                lo, hi = tokens.min(), tokens.max()
                if lo < 0:
                    raise _bad(int(lo))
                if hi >= _N:
                    raise _bad(int(hi))
            return tokens.astype(np.uint8).tobytes()
        if isinstance(tokens, (bytes, bytearray)):
            return bytes(tokens)
        if isinstance(tokens, (int, str)):
            raise TypeError(f"decode expects a sequence of token ids, got {type(tokens).__name__}")
        tokens = list(tokens)
        try:
            return bytes(tokens)
        except (ValueError, TypeError):
            for t in tokens:
                t = operator.index(t)
                if not 0 <= t < _N:
                    raise _bad(t) from None
            raise

    def decode(self, tokens, errors: str = "replace") -> str:
        return self.decode_bytes(tokens).decode("utf-8", errors)

    def decode_single_token_bytes(self, token) -> bytes:
        token = operator.index(token)
        if not 0 <= token < _N:
            raise _bad(token)
        return bytes((token,))

    def decode_tokens_bytes(self, tokens) -> list[bytes]:
        return [self.decode_single_token_bytes(t) for t in tokens]

    def decode_batch(self, batch, *, errors: str = "replace", num_threads: int = 8) -> list[str]:
        return [self.decode(t, errors) for t in batch]

    def decode_bytes_batch(self, batch, *, num_threads: int = 8) -> list[bytes]:
        return [self.decode_bytes(t) for t in batch]

    def token_byte_values(self) -> list[bytes]:
        return [bytes((i,)) for i in range(_N)]

    def is_special_token(self, token) -> bool:
        self.decode_single_token_bytes(token)
        return False

    # ----------------------------------------------------------------- tables and streaming
    def token_byte_table(self):
        """(data, offsets, valid): token i's bytes are data[offsets[i]:offsets[i+1]] (read-only arrays)."""
        t = ByteTokenizer._TABLE
        if t is None:
            data = np.arange(_N, dtype=np.uint8)
            offsets = np.arange(_N + 1, dtype=np.int64)
            valid = np.ones(_N, dtype=np.bool_)
            for a in (data, offsets, valid):
                a.flags.writeable = False
            t = ByteTokenizer._TABLE = (data, offsets, valid)
        return t

    def decode_incremental(self, new_ids, state: dict, *, final: bool = False) -> str:
        return _stream.decode_incremental(self, new_ids, state, final=final)

    def token_pieces(self, ids) -> list[str]:
        return _stream.token_pieces(self, ids)

    def stream_decoder(self) -> "_stream.StreamDecoder":
        return _stream.StreamDecoder(self)
