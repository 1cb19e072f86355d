"""tokenizer.json decoders: `ByteLevel`, `Metaspace`, `Replace` (String pattern), `ByteFallback`,
`Fuse`, `Strip`, in a `Sequence`; a null decoder joins the tokens with spaces (`JoinSpace`).

Each stage maps the list of token strings to a new list (`decode_chain`, as `tokenizers`'
`Decoder::decode_chain`); the text is the last list joined. `decoder_chain.DecoderChain` runs the
stages and reads what its streaming window needs from the attributes below.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import TokenizerFileError, UnsupportedTokenizerError
from ..byte_alphabet import beta_decode
from .fields import metaspace_fields, read_stages

__all__ = ["BYTE_TOKEN_RE", "ByteFallback", "ByteLevel", "DECODERS", "Decoder", "Fuse", "JoinSpace", "Metaspace",
           "Replace", "Strip", "read_decoders"]

FFFD = "\ufffd"
BYTE_TOKEN_RE = re.compile(r"<0x[0-9A-Fa-f]{2}>")


class Decoder:
    """One decoder stage: `decode_chain(tokens) -> tokens`.

    joins:               after it, a stage sees text of several tokens (a byte run is one string).
    is_byte_fallback:    it renders `<0xNN>` tokens as bytes.
    is_byte_level:       it decodes the joined bytes of its tokens (`token_bytes`), so its text may end
                         in the U+FFFD of a character the next token completes.
    windowed_after_join: a match of it cannot span joined tokens (False: a Replace of several
                         characters or of "" after a join).
    needs_primer_text:   a stream window restarts only on a primer whose text is not empty (a Strip
                         after a join).
    """

    joins = False
    is_byte_fallback = False
    is_byte_level = False
    windowed_after_join = True
    needs_primer_text = False

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "Decoder":
        """The stage of its JSON object (`where`, `fieldname`: for errors); a stage with options
        reads and checks them here."""
        return cls()

    def decode_chain(self, tokens: list[str]) -> list[str]:
        raise NotImplementedError

    def per_token(self, s: str, first: bool) -> str:
        """What it makes of one token string on its own (`first`: the first token of the text)."""
        return s


def _strip(tokens: list[str], content: str, start: int, stop: int) -> list[str]:
    new = []
    for t in tokens:
        a = 0
        while a < min(start, len(t)) and t[a] == content:
            a += 1
        z = len(t)
        k = 0
        while k < stop and z > a and t[z - 1] == content:
            z -= 1
            k += 1
        new.append(t[a:z])
    return new


def _bytes_run(run: bytearray) -> str:
    try:
        return run.decode("utf-8")
    except UnicodeDecodeError:
        return FFFD * len(run)  # tokenizers' ByteFallback: one U+FFFD per byte of an invalid run


@dataclass(frozen=True)
class JoinSpace(Decoder):
    """The null decoder: the tokens joined by spaces."""

    joins = True

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [" ".join(tokens)]


@dataclass(frozen=True)
class ByteLevel(Decoder):
    """`ByteLevel`: the tokens' GPT-2 byte-alphabet characters as bytes, decoded as UTF-8 (replace)."""

    joins = True
    is_byte_level = True

    @staticmethod
    def token_bytes(t: str) -> bytes:
        """The bytes one token string stands for."""
        return beta_decode(t) or t.encode("utf-8")

    def decode_chain(self, tokens: list[str]) -> list[str]:
        raw = b"".join(map(self.token_bytes, tokens))
        return [raw.decode("utf-8", "replace")]


@dataclass(frozen=True)
class Metaspace(Decoder):
    """`Metaspace`: `replacement` -> space in every token, dropped in the first one (unless the
    scheme is "never")."""

    replacement: str = "\u2581"
    prepend_scheme: str = "always"

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "Metaspace":
        return cls(*metaspace_fields(obj, where, fieldname))

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [self.per_token(t, i == 0) for i, t in enumerate(tokens)]

    def per_token(self, s: str, first: bool) -> str:
        return s.replace(self.replacement, "" if (first and self.prepend_scheme != "never") else " ")


@dataclass(frozen=True)
class Replace(Decoder):
    """`Replace` of a String pattern `old` by `new` in every token; Regex patterns are refused."""

    old: str
    new: str = ""

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "Replace":
        pat = obj.get("pattern")
        if not (isinstance(pat, dict) and set(pat) == {"String"} and isinstance(pat["String"], str)):
            raise UnsupportedTokenizerError(where, f"{fieldname}.pattern", pat, "only String patterns")
        content = obj.get("content", "")
        if not isinstance(content, str):
            raise TokenizerFileError(f"{where}: {fieldname}.content must be a string, got {content!r}")
        return cls(pat["String"], content)

    @property
    def windowed_after_join(self) -> bool:
        return len(self.old) == 1  # a longer match can span the joined tokens, aligned by all the text before

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [t.replace(self.old, self.new) for t in tokens]

    def per_token(self, s: str, first: bool) -> str:
        return s.replace(self.old, self.new)


@dataclass(frozen=True)
class ByteFallback(Decoder):
    """`ByteFallback`: each run of `<0xNN>` tokens as its bytes, one U+FFFD per byte when the run is
    not UTF-8."""

    joins = True
    is_byte_fallback = True

    def decode_chain(self, tokens: list[str]) -> list[str]:
        new = []
        run = bytearray()
        for t in tokens:
            if len(t) == 6 and t[1] == "0" and BYTE_TOKEN_RE.fullmatch(t) is not None:
                run.append(int(t[3:5], 16))
                continue
            if run:
                new.append(_bytes_run(run))
                run = bytearray()
            new.append(t)
        if run:
            new.append(_bytes_run(run))
        return new


@dataclass(frozen=True)
class Fuse(Decoder):
    """`Fuse`: all tokens as one string."""

    joins = True

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return ["".join(tokens)]


@dataclass(frozen=True)
class Strip(Decoder):
    """`Strip`: up to `start` leading and `stop` trailing `content` characters off every token."""

    content: str = " "
    start: int = 0
    stop: int = 0

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "Strip":
        content = obj.get("content", " ")
        if not isinstance(content, str) or len(content) != 1:
            raise TokenizerFileError(f"{where}: {fieldname}.content must be one character, got {content!r}")
        counts = []
        for key in ("start", "stop"):
            v = obj.get(key, 0)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise TokenizerFileError(f"{where}: {fieldname}.{key} must be a non-negative integer, got {v!r}")
            counts.append(v)
        return cls(content, *counts)

    @property
    def needs_primer_text(self) -> bool:
        # a primer whose text is not empty is stripped at its edges as the whole text is there: the
        # start strip stops inside it, and the end strip finds as many characters to take at its end
        return self.start > 0 or self.stop > 0

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return _strip(tokens, self.content, self.start, self.stop)

    def per_token(self, s: str, first: bool) -> str:
        return _strip([s], self.content, self.start, self.stop)[0]


DECODERS = {"ByteLevel": ByteLevel, "Metaspace": Metaspace, "Replace": Replace, "ByteFallback": ByteFallback,
            "Fuse": Fuse, "Strip": Strip}


def read_decoders(obj, where: str, byte_level: bool) -> tuple[Decoder, ...] | None:
    """The stages of a tokenizer.json `decoder` value (null: `JoinSpace`); None for a byte-level
    model whose decoder is ByteLevel alone (the kernels' byte gather)."""
    if obj is None:
        return (JoinSpace(),)
    stages = read_stages(obj, where, "decoder", "decoders", DECODERS, "supported decoders")
    if byte_level and stages == [ByteLevel()]:
        return None
    return tuple(stages)
