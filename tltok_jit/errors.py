"""Every exception tltok_jit raises on bad input, under one base, `TltokError`.

Each one is also the built-in exception a tiktoken or Hugging Face user already catches: a bad token
id is a `KeyError` (as in tiktoken) and a `ValueError`; a malformed file, a refused special token, a
bad row and a bad registry asset are `ValueError`s; a rank file that cannot be found is a
`FileNotFoundError` (the built-in comes first in each class's bases, so `type(e).__mro__[1]` is it).
`except tltok_jit.TltokError` catches all of them and nothing else.

>>> import tltok_jit
>>> enc = tltok_jit.get_encoding("o200k_base")
>>> try:
...     enc.decode([enc.n_vocab + 10])
... except tltok_jit.TltokError as e:
...     print(type(e).__name__, isinstance(e, KeyError), isinstance(e, ValueError))
UnknownTokenError True True
"""

from __future__ import annotations

import json

__all__ = [
    "ArrowRowError",
    "DisallowedSpecialTokenError",
    "EncodeNotSupportedError",
    "RankFileHashError",
    "RankFileUnavailableError",
    "TltokError",
    "TokenIdError",
    "TokenizerAssetError",
    "TokenizerError",
    "TokenizerFileError",
    "UnknownTokenError",
    "UnknownTokenizerKindError",
    "UnsupportedTokenizerError",
    "raise_disallowed_special_token",
]


class TltokError(Exception):
    """Base of every error tltok_jit raises on bad input."""


# ------------------------------------------------------------------ files
class TokenizerFileError(ValueError, TltokError):
    """A tokenizer file (or a model description) is malformed; the message names the file and the place."""


class UnsupportedTokenizerError(TokenizerFileError):
    """The file uses a feature outside the supported subset; `field` / `value` name it."""

    def __init__(self, where: str, field: str, value, hint: str = ""):
        self.field = field
        self.value = value
        shown = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
        if len(shown) > 200:
            shown = shown[:200] + "..."
        super().__init__(f"{where}: unsupported {field} = {shown}" + (f" ({hint})" if hint else ""))

    def __reduce__(self):  # the message is built from the fields: rebuild from the message alone
        return _rebuild_message, (type(self), self.args[0], {"field": self.field, "value": self.value})


class RankFileHashError(TokenizerFileError):
    """A rank file (found locally or downloaded) does not have the published sha256."""


class RankFileUnavailableError(FileNotFoundError, TltokError):
    """A rank file is in none of the local places and could not be downloaded."""


# ------------------------------------------------------------------ ids and text
class UnknownTokenError(KeyError, ValueError, TltokError):
    """A token id outside the vocabulary (a KeyError as in tiktoken, and a ValueError)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DisallowedSpecialTokenError(ValueError, TltokError):
    """Text holds a special token that `disallowed_special` refuses (`token` is that token)."""

    def __init__(self, message: str, token: str):
        super().__init__(message)
        self.token = token

    def __reduce__(self):  # crosses process boundaries (multiprocessing) intact
        return type(self), (self.args[0], self.token)


def raise_disallowed_special_token(token: str):
    """Raise tiktoken's error (and advice) for a disallowed special token found in the text."""
    raise DisallowedSpecialTokenError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        "If you want this text to be encoded as a special token, "
        f"pass it to `allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
        f"If you want this text to be encoded as normal text, disable the check for this token "
        f"by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        "To disable this check for all special tokens, pass `disallowed_special=()`.\n",
        token,
    )


class ArrowRowError(ValueError, TltokError):
    """A row of a column cannot be encoded (invalid UTF-8 with errors="strict", a disallowed special
    token); `row` is its index in the whole input."""

    def __init__(self, message: str, row: int | None = None):
        super().__init__(message)
        self.row = row  # None when re-created from the message alone

    def __reduce__(self):
        return type(self), (self.args[0], self.row)


# ------------------------------------------------------------------ the tokenizer registry
class TokenizerError(ValueError, TltokError):
    """Base of every error the tokenizer registry and its kinds raise on bad input."""


class UnknownTokenizerKindError(TokenizerError):
    """`TokenizerSpec.kind` names no registered kind (the message lists the known ones)."""


class TokenizerAssetError(TokenizerError):
    """An asset file is missing, unreadable or malformed (the message names its key, path and place)."""


class TokenIdError(TokenizerError):
    """An id is not an integer, negative, or not in the vocabulary."""


class EncodeNotSupportedError(TokenizerError):
    """`encode` was called on a decode-only kind (test `supports_encode` first)."""


def _rebuild_message(cls, message: str, attrs: dict):
    e = TltokError.__new__(cls)
    Exception.__init__(e, message)
    e.__dict__.update(attrs)
    return e


class BatchArgumentError(ValueError, TltokError):
    """A batch cannot be made as asked: `argument` names the argument at fault, `row` the input row
    (None when no row is)."""

    def __init__(self, message: str, argument: str, row: int | None = None):
        super().__init__(message)
        self.argument = argument
        self.row = row

    def __reduce__(self):
        return type(self), (self.args[0], self.argument, self.row)


class PaddingError(BatchArgumentError):
    """A fixed-shape batch (`encode_batch_padded`) cannot be made as asked."""


class PackingError(BatchArgumentError):
    """Rows cannot be packed (`tltok_jit.packing.pack`, the loader) as asked."""


class ResumeError(PackingError):
    """A state given to `TokenBatches.load_state_dict` belongs to other options, files or shares;
    `argument` names the first that differs."""
