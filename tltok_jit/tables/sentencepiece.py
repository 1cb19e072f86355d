"""SentencePiece model -> the validated flat tables the kernels in `kernels.sentencepiece` index.

The checks are SentencePiece's own (`ModelInterface::InitializePieces`, the charsmap decoder) plus
the limits of this implementation, each refused with the file named: a WORD or CHAR model, BPE with
UNUSED pieces (their re-segmentation is not implemented), whitespace as suffix, a denormalizer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ..kernels import sentencepiece as K
from ..loaders.sentencepiece_model import (BPE, BYTE, CONTROL, NORMAL, UNIGRAM, UNKNOWN, UNUSED, USER_DEFINED,
                                           SentencePieceModel)
from ..errors import TokenizerAssetError

__all__ = ["SentencePieceTables", "build_tables", "byte_of_piece"]

_MERGEABLE = (NORMAL, USER_DEFINED, UNUSED)
_BYTE_PIECES = {f"<0x{b:02X}>": b for b in range(256)}  # PieceToByte: exactly ByteToPiece's spelling
_FLT_MAX = float(np.finfo(np.float32).max)
_FLT_MIN = float(np.finfo(np.float32).tiny)


def byte_of_piece(piece: str) -> int:
    """The byte a `<0xNN>` piece stands for, or -1."""
    return _BYTE_PIECES.get(piece, -1)


def _capacity(n: int) -> int:
    cap = 16
    while cap < 2 * n:
        cap *= 2
    return cap


def _hash(keys: list[int]) -> tuple[np.ndarray, np.ndarray]:
    arr = np.array(keys, dtype=np.int64) if keys else np.zeros(0, np.int64)
    return K.hash_build(arr, _capacity(len(arr)))


def _trie(entries: list[tuple[bytes, int]]):
    """(keys, index, value) of a byte trie holding `entries` (bytes -> value >= 0)."""
    child: dict[int, int] = {}  # node * 256 + byte -> child node
    value = [-1]
    for data, v in entries:
        node = 0
        for b in data:
            key = node * 256 + b
            nxt = child.get(key)
            if nxt is None:
                nxt = len(value)
                value.append(-1)
                child[key] = nxt
            node = nxt
        value[node] = v
    # hash_find returns the position in the key list; trie_child adds one: order keys by child node.
    keys = [0] * len(child)
    for key, node in child.items():
        keys[node - 1] = key
    hkeys, hindex = _hash(keys)
    return hkeys, hindex, np.array(value, dtype=np.int64)


@dataclass(frozen=True)
class SentencePieceTables:
    model: SentencePieceModel
    unk_id: int
    byte_ids: np.ndarray          # byte -> id of its <0xNN> piece (zeros without byte fallback)
    piece_bytes: list[int]        # id -> byte for BYTE pieces, -1 otherwise
    charsmap_units: np.ndarray    # the precompiled charsmap's double array (uint32)
    charsmap_repl: np.ndarray     # its NUL-separated replacement strings (uint8)
    user_trie: tuple              # user-defined symbols: (keys, index, value)
    bpe: tuple | None             # kernels.bpe_encode's table arguments
    unigram: tuple | None         # kernels.unigram_encode's table arguments


def _check_pieces(m: SentencePieceModel) -> tuple[int, dict[str, int], dict[str, int]]:
    where = m.source
    pieces_: dict[str, int] = {}
    reserved: dict[str, int] = {}
    unk_id = -1
    bytes_found = set()
    for i, (p, t) in enumerate(zip(m.pieces, m.types)):
        if not p:
            raise TokenizerAssetError(f"{where}: piece {i} is empty")
        if t not in (NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE):
            raise TokenizerAssetError(f"{where}: piece {i} ({p!r}) has unknown type {t}")
        table = pieces_ if t in _MERGEABLE else reserved
        if p in table:
            raise TokenizerAssetError(f"{where}: piece {i} ({p!r}) is already defined (id {table[p]})")
        table[p] = i
        if t == UNKNOWN:
            if unk_id >= 0:
                raise TokenizerAssetError(f"{where}: a second unknown piece at id {i} (first {unk_id})")
            unk_id = i
        if t == BYTE:
            if not m.byte_fallback:
                raise TokenizerAssetError(f"{where}: byte piece {p!r} (id {i}) although byte_fallback is false")
            b = byte_of_piece(p)
            if b < 0:
                raise TokenizerAssetError(f"{where}: byte piece {p!r} (id {i}) is not <0xNN>")
            bytes_found.add(b)
    if unk_id < 0:
        raise TokenizerAssetError(f"{where}: no unknown piece (SentencePiece requires one)")
    if m.byte_fallback and len(bytes_found) != 256:
        raise TokenizerAssetError(f"{where}: byte_fallback needs 256 byte pieces, found {len(bytes_found)}")
    return unk_id, pieces_, reserved


def _charsmap(m: SentencePieceModel) -> tuple[np.ndarray, np.ndarray]:
    blob = m.normalizer.precompiled_charsmap
    if not blob:
        return np.zeros(0, np.uint32), np.zeros(0, np.uint8)
    where = f"{m.source}: normalizer_spec.precompiled_charsmap"
    if len(blob) <= 4:
        raise TokenizerAssetError(f"{where} is broken ({len(blob)} bytes)")
    (trie_size,) = struct.unpack("<I", blob[:4])
    if 4 + trie_size > len(blob) or trie_size % 4:
        raise TokenizerAssetError(f"{where}: trie size {trie_size} does not fit the {len(blob)}-byte blob")
    units = np.frombuffer(blob, dtype="<u4", count=trie_size // 4, offset=4).astype(np.uint32)
    repl = np.frombuffer(blob, dtype=np.uint8, offset=4 + trie_size).copy()
    _check_replacements(units, repl, where)
    return units, repl


_MAX_TRIE_DEPTH = 1024  # bytes of the longest rule; the charsmaps SentencePiece ships need about 10


def _trie_values(units: np.ndarray) -> np.ndarray | None:
    """Every value the normalizer kernel's walk of the double array (`_darts_longest`) can read,
    or None when the walk reaches deeper than _MAX_TRIE_DEPTH. Breadth first over all walks at once:
    a unit whose label is byte c hangs from the base `index ^ c`, and leads to `index ^ offset`."""
    n = units.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    u = units.astype(np.int64)
    offset = (u >> 10) << ((u & (1 << 9)) >> 6)
    index = np.arange(n, dtype=np.int64)
    step = index ^ offset
    parent = index ^ (u & 0xFF)
    # a byte label, a base inside the array, and the walk goes on from it
    edge = ((u & 0x80000000) == 0) & (parent < n) & (step < n)
    parent = parent[edge]
    target = step[edge]
    leaf = ((u[edge] >> 8) & 1) == 1
    if offset[0] >= n:
        return np.zeros(0, np.int64)
    reached = np.zeros(n, np.bool_)
    frontier = np.zeros(n, np.bool_)
    frontier[offset[0]] = True
    values = []
    for _ in range(_MAX_TRIE_DEPTH):
        reached |= frontier
        sel = frontier[parent]
        values.append(u[target[sel & leaf]] & 0x7FFFFFFF)
        frontier = np.zeros(n, np.bool_)
        frontier[target[sel]] = True
        frontier &= ~reached
        if not frontier.any():
            return np.unique(np.concatenate(values))
    return None


def _check_replacements(units: np.ndarray, repl: np.ndarray, where: str) -> None:
    """Every replacement the trie can name starts a NUL-terminated string of valid UTF-8 inside the
    blob (SentencePiece writes them so; a damaged trie or string would make the normalized text
    invalid UTF-8, or point past the strings)."""
    values = _trie_values(units)
    if values is None:
        raise TokenizerAssetError(f"{where}: the trie is deeper than {_MAX_TRIE_DEPTH} bytes (damaged?)")
    data = repl.tobytes()
    for v in values.tolist():
        if v >= len(data) or (v > 0 and data[v - 1] != 0):
            raise TokenizerAssetError(f"{where}: the trie names replacement offset {v}, which starts no string "
                                      f"of the {len(data)}-byte replacement section")
        stop = data.find(b"\0", v)
        try:
            data[v:stop if stop >= 0 else len(data)].decode("utf-8")
        except UnicodeDecodeError:
            raise TokenizerAssetError(f"{where}: the replacement string at offset {v} is not UTF-8") from None


def _bpe_tables(m: SentencePieceModel, pieces_: dict[str, int], reserved: dict[str, int], unk_id: int):
    n = len(m.pieces)
    char_sym: dict[str, int] = {}
    for p in pieces_:
        for c in p:
            if c not in char_sym:
                char_sym[c] = pieces_.get(c, -1)
    for p in reserved:  # a single-character reserved piece is what that character's symbol becomes
        if len(p) == 1 and p not in char_sym:
            char_sym[p] = -1
    virtual = [c for c, s in char_sym.items() if s < 0]
    for k, c in enumerate(virtual):
        char_sym[c] = n + k
    sym_out = np.empty(n + len(virtual), np.int64)
    for i, p in enumerate(m.pieces):
        sym_out[i] = reserved.get(p, pieces_.get(p, unk_id))
    for k, c in enumerate(virtual):
        sym_out[n + k] = reserved.get(c, unk_id)

    pair_keys, merged, scores, bigrams = [], [], [], set()
    flags = dict.fromkeys(char_sym, 0)
    for p, pid in pieces_.items():
        if len(p) < 2:
            continue
        for k in range(1, len(p)):
            left, right = p[:k], p[k:]
            a = char_sym[left] if len(left) == 1 else pieces_.get(left, -1)
            b = char_sym[right] if len(right) == 1 else pieces_.get(right, -1)
            if a >= 0 and b >= 0:
                pair_keys.append((a << 32) | b)
                merged.append(pid)
                scores.append(m.scores[pid])
            bigrams.add((ord(p[k - 1]) << 21) | ord(p[k]))
            flags[p[k - 1]] |= 1
            flags[p[k]] |= 2
    pkeys, pindex = _hash(pair_keys)
    bkeys, bindex = _hash(sorted(bigrams))
    chars = list(char_sym)
    ckeys, cindex = _hash([ord(c) for c in chars])
    csym = np.array([char_sym[c] for c in chars], dtype=np.int64)
    cflags = np.array([flags[c] for c in chars], dtype=np.int64)
    dense = np.full(0x10000, -1, np.int32)
    for k, c in enumerate(chars):
        if ord(c) < 0x10000:
            dense[ord(c)] = k
    return (dense, ckeys, cindex, csym, cflags, sym_out, pkeys, pindex, np.array(merged, dtype=np.int64),
            np.array(scores, dtype=np.float32), bkeys, bindex)


def _unigram_tables(m: SentencePieceModel, pieces_: dict[str, int]):
    trie = _trie([(p.encode("utf-8"), i) for p, i in pieces_.items()])
    kind = np.zeros(len(m.pieces), np.int64)
    lo, hi = _FLT_MAX, _FLT_MIN
    for i, (t, s) in enumerate(zip(m.types, m.scores)):
        kind[i] = {USER_DEFINED: 1, UNUSED: 2}.get(t, 0)
        if t == NORMAL:
            lo, hi = min(lo, s), max(hi, s)
    min_score, max_score = np.float32(lo), np.float32(hi)
    unk_score = np.float32(min_score - np.float32(10.0))
    return trie + (np.array(m.scores, dtype=np.float32), kind, max_score, unk_score)


def build_tables(m: SentencePieceModel) -> SentencePieceTables:
    where = m.source
    if m.model_type not in (BPE, UNIGRAM):
        raise TokenizerAssetError(f"{where}: model_type {m.model_type} is not supported (BPE and UNIGRAM only)")
    if m.treat_whitespace_as_suffix:
        raise TokenizerAssetError(f"{where}: treat_whitespace_as_suffix is not supported")
    if m.denormalizer is not None and m.denormalizer.precompiled_charsmap:
        raise TokenizerAssetError(f"{where}: a denormalizer is not supported")
    unk_id, pieces_, reserved = _check_pieces(m)
    if m.model_type == BPE and any(t == UNUSED for t in m.types):
        raise TokenizerAssetError(f"{where}: BPE with UNUSED pieces is not supported")
    byte_ids = np.zeros(256, np.int64)
    piece_bytes = [-1] * len(m.pieces)
    for i, (p, t) in enumerate(zip(m.pieces, m.types)):
        if t == BYTE:
            b = byte_of_piece(p)
            byte_ids[b] = i
            piece_bytes[i] = b
    units, repl = _charsmap(m)
    user = _trie([(p.encode("utf-8"), i) for p, i in pieces_.items() if m.types[i] == USER_DEFINED])
    bpe = _bpe_tables(m, pieces_, reserved, unk_id) if m.model_type == BPE else None
    unigram = _unigram_tables(m, pieces_) if m.model_type == UNIGRAM else None
    return SentencePieceTables(
        model=m, unk_id=unk_id, byte_ids=_frozen(byte_ids), piece_bytes=piece_bytes, charsmap_units=_frozen(units),
        charsmap_repl=_frozen(repl), user_trie=_frozen(user), bpe=_frozen(bpe), unigram=_frozen(unigram))


def _frozen(x):
    """Tables read-only: the text and column kernels then share one compiled variant of each
    single-text kernel (a writable and a read-only argument type compile two)."""
    if isinstance(x, np.ndarray):
        x.flags.writeable = False
        return x
    if isinstance(x, tuple):
        return tuple(_frozen(a) for a in x)
    return x
