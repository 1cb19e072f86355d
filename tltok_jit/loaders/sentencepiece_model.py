"""Reader of SentencePiece `.model` files (a serialized `sentencepiece.ModelProto`, proto2) without protobuf.

Only the fields encoding and decoding need are kept (field numbers from `src/sentencepiece_model.proto`);
unknown fields are skipped, absent fields take the proto defaults. Every length and offset is checked
against the buffer, so a truncated or garbled file raises `TokenizerAssetError` naming the file, the
message and the byte offset.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..errors import TokenizerAssetError

__all__ = ["NORMAL", "UNKNOWN", "CONTROL", "USER_DEFINED", "UNUSED", "BYTE", "UNIGRAM", "BPE",
           "NormalizerSpec", "SentencePieceModel", "read_sentencepiece_model", "parse_model_proto"]

# SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
# TrainerSpec.ModelType
UNIGRAM, BPE, WORD, CHAR = 1, 2, 3, 4


@dataclass
class NormalizerSpec:
    name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True


@dataclass
class SentencePieceModel:
    """What a `.model` file says: pieces (text, score, type) in id order, and the specs that matter."""

    pieces: list[str]
    scores: list[float]
    types: list[int]
    model_type: int = UNIGRAM
    byte_fallback: bool = False
    treat_whitespace_as_suffix: bool = False
    unk_surface: str = " \u2047 "
    normalizer: NormalizerSpec = field(default_factory=NormalizerSpec)
    denormalizer: NormalizerSpec | None = None
    source: str = ""


class _Reader:
    def __init__(self, data: bytes, where: str):
        self.data = data
        self.where = where

    def fail(self, what: str, pos: int):
        raise TokenizerAssetError(f"{self.where}: {what} at byte {pos} (truncated or not a SentencePiece model?)")

    def varint(self, pos: int, end: int) -> tuple[int, int]:
        result = shift = 0
        start = pos
        while True:
            if pos >= end:
                self.fail("unterminated varint", start)
            b = self.data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result, pos
            shift += 7
            if shift >= 70:
                self.fail("varint longer than 10 bytes", start)

    def fields(self, pos: int, end: int):
        """(field number, wire type, value, position) for each field of the message in [pos, end);
        value is an int (types 0, 1, 5) or a (start, stop) slice (type 2)."""
        while pos < end:
            at = pos
            key, pos = self.varint(pos, end)
            num, wire = key >> 3, key & 7
            if num == 0:
                self.fail("field number 0", at)
            if wire == 0:
                value, pos = self.varint(pos, end)
            elif wire == 1:
                if pos + 8 > end:
                    self.fail("truncated 64-bit field", at)
                value = int.from_bytes(self.data[pos:pos + 8], "little")
                pos += 8
            elif wire == 5:
                if pos + 4 > end:
                    self.fail("truncated 32-bit field", at)
                value = int.from_bytes(self.data[pos:pos + 4], "little")
                pos += 4
            elif wire == 2:
                n, pos = self.varint(pos, end)
                if pos + n > end:
                    self.fail(f"field {num} of length {n} runs past its message", at)
                value = (pos, pos + n)
                pos += n
            else:
                self.fail(f"unsupported wire type {wire} of field {num}", at)
            yield num, wire, value, at

    def text(self, span, what: str) -> str:
        try:
            return self.data[span[0]:span[1]].decode("utf-8")
        except UnicodeDecodeError:
            self.fail(f"{what} is not UTF-8", span[0])

    def expect(self, wire: int, want: int, num: int, at: int, msg: str):
        if wire != want:
            self.fail(f"{msg} field {num} has wire type {wire}, expected {want}", at)


def _int32(v: int) -> int:
    """A proto int32 read from a varint (negative values are 10-byte two's complement)."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _normalizer(r: _Reader, span, msg: str) -> NormalizerSpec:
    spec = NormalizerSpec()
    for num, wire, value, at in r.fields(*span):
        if num == 1:
            r.expect(wire, 2, num, at, msg)
            spec.name = r.text(value, f"{msg}.name")
        elif num == 2:
            r.expect(wire, 2, num, at, msg)
            spec.precompiled_charsmap = r.data[value[0]:value[1]]
        elif num in (3, 4, 5):
            r.expect(wire, 0, num, at, msg)
            setattr(spec, {3: "add_dummy_prefix", 4: "remove_extra_whitespaces", 5: "escape_whitespaces"}[num],
                    bool(value))
    return spec


def parse_model_proto(data: bytes, where: str = "<bytes>") -> SentencePieceModel:
    """A ModelProto's bytes -> SentencePieceModel (structure only; `kinds.sentencepiece` checks the pieces)."""
    r = _Reader(data, where)
    pieces: list[str] = []
    scores: list[float] = []
    types: list[int] = []
    model = SentencePieceModel(pieces, scores, types, source=where)
    saw_trainer = saw_normalizer = False
    for num, wire, value, at in r.fields(0, len(data)):
        if num == 1:  # SentencePiece
            r.expect(wire, 2, num, at, "ModelProto")
            piece, score, ptype = None, 0.0, NORMAL
            for n2, w2, v2, at2 in r.fields(*value):
                if n2 == 1:
                    r.expect(w2, 2, n2, at2, "SentencePiece")
                    piece = r.text(v2, f"piece {len(pieces)}")
                elif n2 == 2:
                    r.expect(w2, 5, n2, at2, "SentencePiece")
                    score = struct.unpack("<f", v2.to_bytes(4, "little"))[0]
                elif n2 == 3:
                    r.expect(w2, 0, n2, at2, "SentencePiece")
                    ptype = _int32(v2)
            if piece is None:
                r.fail(f"piece {len(pieces)} has no text", at)
            pieces.append(piece)
            scores.append(score)
            types.append(ptype)
        elif num == 2:  # TrainerSpec
            r.expect(wire, 2, num, at, "ModelProto")
            saw_trainer = True
            for n2, w2, v2, at2 in r.fields(*value):
                if n2 == 3:
                    r.expect(w2, 0, n2, at2, "TrainerSpec")
                    model.model_type = _int32(v2)
                elif n2 == 35:
                    r.expect(w2, 0, n2, at2, "TrainerSpec")
                    model.byte_fallback = bool(v2)
                elif n2 == 24:
                    r.expect(w2, 0, n2, at2, "TrainerSpec")
                    model.treat_whitespace_as_suffix = bool(v2)
                elif n2 == 44:
                    r.expect(w2, 2, n2, at2, "TrainerSpec")
                    model.unk_surface = r.text(v2, "unk_surface")
        elif num == 3:
            r.expect(wire, 2, num, at, "ModelProto")
            model.normalizer = _normalizer(r, value, "NormalizerSpec")
            saw_normalizer = True
        elif num == 5:
            r.expect(wire, 2, num, at, "ModelProto")
            model.denormalizer = _normalizer(r, value, "denormalizer NormalizerSpec")
    if not pieces:
        raise TokenizerAssetError(f"{where}: no pieces (not a SentencePiece model?)")
    # SentencePiece always writes both specs (after the pieces): a file cut short at a field
    # boundary would otherwise read as one with default specs.
    for present, name in ((saw_trainer, "trainer_spec"), (saw_normalizer, "normalizer_spec")):
        if not present:
            raise TokenizerAssetError(f"{where}: no {name} (truncated or not a SentencePiece model?)")
    return model


def read_sentencepiece_model(path: str) -> SentencePieceModel:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TokenizerAssetError(f"asset 'model' ({path}) cannot be read: {e}") from None
    return parse_model_proto(data, f"asset 'model' ({path})")
