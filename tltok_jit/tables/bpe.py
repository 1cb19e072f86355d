"""ModelDescription -> validated flat arrays (the only thing kernels see).

Everything a kernel indexes is checked here: every id in a table is < n_vocab and has bytes, the
256 single bytes are tokens, every merge's parts and result exist, the pattern has a scanner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple
import numpy as np

from ..kernels.hashing import (BLOOM_BITS_PER_PAIR, MAX_PAIR_ID, MAX_PAIR_RANK, SHORT_WORDS, aligned_zeros,
                               build_pair_bloom, build_vocab_table, count_short, fill_short_table, insert_pairs,
                               rank_splits)
from functools import lru_cache

from ..kernels.merge import build_byte_pairs
from ..kernels.trees import CHAR_TABLE, F_REACH, boundary_flags, char_bpe_table, token_trees
from ..kernels.scan import (CLS_DIGIT_EXTRA, PAT_CL100K, PAT_GPT2, PAT_GPT2_DIGITS, PAT_LLAMA3, PAT_O200K,
                            PAT_QWEN2, PAT_TEKKEN, PAT_WHOLE)
from . import cache as table_cache
from .cache import RANDOM_ACCESS, on_huge_pages
from ..kernels.encode import CFG_IGNORE_MERGES, CFG_PATTERN, CFG_TREES, CFG_USE_CACHE
from ..kernels.layout import Tables
from ..model.description import ModelDescription, TokenizerFileError
from ..model.patterns import KINDS, PatternKind
from ..unicode import RUST_NUMERIC_EXTRA, class_tables  # (RUST_NUMERIC_EXTRA: numbers to HF's Digits only)

# the kernels' code of each pattern kind (patterns.KINDS says what the kinds are)
PATTERN_CODES = {"gpt2": PAT_GPT2, "cl100k": PAT_CL100K, "o200k": PAT_O200K, "llama3": PAT_LLAMA3,
                 "qwen2": PAT_QWEN2, "tekken": PAT_TEKKEN, "gpt2_digits": PAT_GPT2_DIGITS, "whole": PAT_WHOLE}
_KIND_OF_CODE = {code: KINDS[name] for name, code in PATTERN_CODES.items()}


def pattern_kind(T: Tables) -> PatternKind:
    """What the scanner of tables `T` is (patterns.PatternKind)."""
    return _KIND_OF_CODE[int(T.config[CFG_PATTERN])]


@lru_cache(maxsize=None)
def _digits_class_tables():
    """The Unicode 16 table with RUST_NUMERIC_EXTRA (OTHER there) marked CLS_DIGIT_EXTRA."""
    s1, s2, version = class_tables()
    s1 = s1.copy()
    blocks = [s2]
    n_blocks = len(s2) // 256
    for hi in sorted({cp >> 8 for cp in RUST_NUMERIC_EXTRA}):
        blk = s2[int(s1[hi]) * 256:(int(s1[hi]) + 1) * 256].copy()  # a private copy: blocks are shared
        for cp in RUST_NUMERIC_EXTRA:
            if cp >> 8 == hi:
                assert blk[cp & 255] == 0, hex(cp)
                blk[cp & 255] = CLS_DIGIT_EXTRA
        s1[hi] = n_blocks
        n_blocks += 1
        blocks.append(blk)
    s2 = np.concatenate(blocks)
    _readonly(s1, s2)
    return s1, s2, version + "+rust-numeric-17"


def class_tables_for(kind: str):
    """(stage1, stage2, unicode version) that the scanner of pattern kind `kind` indexes."""
    if kind == "gpt2_digits":
        return _digits_class_tables()
    return class_tables()


TREES_SAME = 1  # TableConfig.trees: the merge trees agree with the merge kernel (merge_chars may be used)
TREES_MONOTONE = 2  # TableConfig.trees: every token's own merges come in non-decreasing rank order


class TableConfig(NamedTuple):
    """`Tables.config` by name. The kernels read the int64 array at its `kernels.encode.CFG_*` slots;
    Python code reads it with `table_config` and makes one with `TableConfig(...).array()`."""

    pattern_kind: int  # the scanner: kernels.scan PAT_*
    ignore_merges: bool  # a piece that is a token is that token (ModelDescription.ignore_merges)
    use_cache: bool  # the per-worker piece caches are used
    trees: int  # TREES_* bits

    def array(self) -> np.ndarray:
        """The read-only int64 array the kernels read."""
        c = np.zeros(4, dtype=np.int64)
        c[CFG_PATTERN] = self.pattern_kind
        c[CFG_IGNORE_MERGES] = int(self.ignore_merges)
        c[CFG_USE_CACHE] = int(self.use_cache)
        c[CFG_TREES] = self.trees
        c.flags.writeable = False
        return c


def table_config(T: Tables) -> TableConfig:
    """The config of tables `T` by name."""
    c = T.config
    return TableConfig(int(c[CFG_PATTERN]), bool(c[CFG_IGNORE_MERGES]), bool(c[CFG_USE_CACHE]), int(c[CFG_TREES]))


def with_config(T: Tables, **changes) -> Tables:
    """`T` with some config fields replaced (e.g. `pattern_kind=PAT_WHOLE`); the arrays are shared."""
    return T._replace(config=table_config(T)._replace(**changes).array())


def _merge_trees(tok_bytes, offsets, byte_ids, pair_slots, rank_ids, ordinary, byte_level: bool):
    """(char_bpe, tok_flags, crank, split_l, split_r, TREES_* bits) for a byte-level vocabulary;
    empty tables and 0 otherwise."""
    n_vocab = len(offsets) - 1
    if not byte_level or not ordinary.any():
        return (np.zeros(CHAR_TABLE, dtype=np.uint64), np.zeros(n_vocab, dtype=np.uint8),
                np.full(n_vocab, -1, dtype=np.int64), np.full(n_vocab, -1, dtype=np.int32),
                np.full(n_vocab, -1, dtype=np.int32), 0)
    max_len = int(np.diff(offsets)[ordinary].max())
    reach, crank, split_l, split_r, same, monotone = token_trees(tok_bytes, offsets, byte_ids, pair_slots,
                                                                 rank_ids, ordinary, max_len)
    flags = boundary_flags(tok_bytes, offsets, pair_slots, reach, crank, split_l, split_r)
    char_bpe = char_bpe_table(byte_ids, pair_slots, rank_ids)
    bits = (TREES_SAME if same else 0) | (TREES_MONOTONE if monotone else 0)
    return char_bpe, flags, crank, split_l, split_r, bits


def unreachable_filter(by_id: list, unreachable: np.ndarray) -> np.ndarray:
    """Bits (length & 15) << 16 | first byte << 8 | last byte of the flagged tokens of >= 2 bytes with
    a byte >= 0x80: the pieces the character route must look up whole (encode._maybe_unreachable)."""
    filt = np.zeros(1 << 14, dtype=np.uint64)
    for t in np.flatnonzero(unreachable):
        b = by_id[t]
        if b is None or len(b) < 2 or max(b) < 0x80:
            continue
        k = ((len(b) & 15) << 16) | (b[0] << 8) | b[-1]
        filt[k >> 6] |= np.uint64(1 << (k & 63))
    return filt


@dataclass
class Compiled:
    tables: Tables
    valid: np.ndarray  # bool[n_vocab]: id has bytes
    n_vocab: int
    added: list  # AddedToken, index = position in the trie's token numbering
    unicode_version: str


def pow2_at_least(n: int) -> int:
    """The least power of two >= max(n, 16) (hash-table sizes)."""
    c = 16
    while c < n:
        c <<= 1
    return c


def _on_huge_pages(T: Tables) -> Tables:
    """`T` with its RANDOM_ACCESS tables copied to huge pages (table_cache.on_huge_pages)."""
    return T._replace(**dict(zip(RANDOM_ACCESS, on_huge_pages([getattr(T, f) for f in RANDOM_ACCESS]))))


def _readonly(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.flags.writeable = False


def _build_trie(contents: list[bytes]):
    children: list[dict[int, int]] = [{}]
    token_at: list[int] = [-1]
    for idx, data in enumerate(contents):
        node = 0
        for byte in data:
            nxt = children[node].get(byte)
            if nxt is None:
                nxt = len(children)
                children[node][byte] = nxt
                children.append({})
                token_at.append(-1)
            node = nxt
        if token_at[node] < 0:
            token_at[node] = idx
    # Node 0 (the empty prefix) is not a kernel node: the root array maps the first byte directly.
    root = np.full(256, -1, dtype=np.int32)
    for byte, child in children[0].items():
        root[byte] = child
    starts = np.zeros(len(children) + 1, dtype=np.int32)
    ebyte: list[int] = []
    echild: list[int] = []
    for n, ch in enumerate(children):
        starts[n] = len(ebyte)
        for byte in sorted(ch):
            ebyte.append(byte)
            echild.append(ch[byte])
    starts[len(children)] = len(ebyte)
    return (root, starts, np.array(ebyte, dtype=np.uint8), np.array(echild, dtype=np.int32),
            np.array(token_at, dtype=np.int32))


def compile_model(model: ModelDescription, *, use_cache: bool = True) -> Compiled:
    """Validate `model` and lay it out as flat arrays (loaded from the table cache when this model
    was compiled before by this code, see table_cache)."""
    key = None
    if table_cache.enabled():
        key = table_cache.fingerprint(model, use_cache)
        hit = table_cache.load(key, on_huge_pages)
        if hit is not None:
            tables, valid, n_vocab, uversion = hit
            return Compiled(tables, valid, n_vocab, list(model.added_tokens), uversion)
    compiled = _compile_model(model, use_cache)
    if key is not None:
        table_cache.save(key, compiled.tables, compiled.valid, compiled.n_vocab, compiled.unicode_version)
    return compiled


def _compile_model(model: ModelDescription, use_cache: bool) -> Compiled:
    where = model.source or model.name
    if model.pattern_kind not in PATTERN_CODES:
        raise TokenizerFileError(
            f"{where}: no scanner for split pattern kind {model.pattern_kind!r} "
            f"(pattern {model.pattern!r}); known kinds: {sorted(PATTERN_CODES)}")
    vocab = model.vocab
    if not vocab:
        raise TokenizerFileError(f"{where}: the vocabulary is empty")
    max_id = max(vocab.values())
    min_id = min(vocab.values())
    for t in model.added_tokens:
        max_id = max(max_id, t.id)
        min_id = min(min_id, t.id)
    if min_id < 0:
        raise TokenizerFileError(f"{where}: negative token id {min_id}")
    if max_id >= 2**31 - 1:
        raise TokenizerFileError(f"{where}: token id {max_id} is too large")
    n_vocab = max_id + 1
    if model.explicit_n_vocab is not None and model.explicit_n_vocab != n_vocab:
        raise TokenizerFileError(
            f"{where}: expected {model.explicit_n_vocab} tokens, the ids go up to {max_id}")

    by_id: list[bytes | None] = [None] * n_vocab
    for data, i in vocab.items():
        if not data:
            raise TokenizerFileError(f"{where}: token {i} has no bytes")
        if by_id[i] is not None:
            raise TokenizerFileError(f"{where}: id {i} is given to two tokens, {by_id[i]!r} and {data!r}")
        by_id[i] = data
    added_contents = []
    added_ids_seen: set[int] = set()
    for t in model.added_tokens:
        content = t.content.encode("utf-8")
        if not content:
            raise TokenizerFileError(f"{where}: added token {t.id} is empty")
        if by_id[t.id] is None:
            by_id[t.id] = content if model.added_bytes is None else model.added_bytes.get(t.id, content)
        elif t.id in added_ids_seen:
            pass  # several added tokens share an id (o200k_harmony); decoding gives the first one
        elif model.merges is None and by_id[t.id] != content:
            raise TokenizerFileError(
                f"{where}: special token {t.content!r} has id {t.id}, which is the ordinary token {by_id[t.id]!r}")
        added_contents.append(content)
        added_ids_seen.add(t.id)

    lengths = np.array([len(b) if b is not None else 0 for b in by_id], dtype=np.int64)
    offsets = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tok_bytes = np.frombuffer(b"".join(b for b in by_id if b is not None), dtype=np.uint8).copy()
    valid = lengths > 0

    ordinary = np.zeros(n_vocab, dtype=np.bool_)
    ordinary[np.fromiter(vocab.values(), dtype=np.int64, count=len(vocab))] = True
    slots, slot_hash, dup = build_vocab_table(tok_bytes, offsets, ordinary, pow2_at_least(2 * len(vocab)))
    if dup >= 0:
        raise TokenizerFileError(f"{where}: token {dup} repeats the bytes of another token")

    short_vocab = aligned_zeros(SHORT_WORDS * pow2_at_least(2 * count_short(offsets, ordinary)), np.uint64)
    fill_short_table(short_vocab, tok_bytes, offsets, ordinary)

    byte_ids = np.full(256, -1, dtype=np.int32)
    for b in range(256):
        i = vocab.get(bytes([b]))
        if i is None:
            if model.allow_missing_bytes or model.char_level:
                continue  # -1: the Encoding keeps such bytes away from the byte-level kernels
            raise TokenizerFileError(f"{where}: the single byte {b:#04x} is not a token (byte-level BPE needs all 256)")
        byte_ids[b] = i

    if model.merges is None:
        lefts, rights, ranks, ids = rank_splits(tok_bytes, offsets, ordinary, slots, slot_hash)
    else:
        m = len(model.merges)
        lefts = np.empty(m, dtype=np.int32)
        rights = np.empty(m, dtype=np.int32)
        ids = np.empty(m, dtype=np.int32)
        for r, (a, b) in enumerate(model.merges):
            ia, ib, im = vocab.get(a), vocab.get(b), vocab.get(a + b)
            if ia is None or ib is None or im is None:
                missing = a if ia is None else b if ib is None else a + b
                raise TokenizerFileError(
                    f"{where}: merge {r} ({a!r} + {b!r}) uses {missing!r}, which is not in the vocabulary")
            lefts[r], rights[r], ids[r] = ia, ib, im
        ranks = np.arange(m, dtype=np.int32)
    top_id = max((int(a.max()) for a in (lefts, rights, ids) if len(a)), default=0)
    if top_id > MAX_PAIR_ID:
        raise TokenizerFileError(f"{where}: merges use token id {top_id}; the merge table holds ids up to {MAX_PAIR_ID}")
    if len(ranks) and int(ranks.max()) > MAX_PAIR_RANK:
        raise TokenizerFileError(f"{where}: {int(ranks.max()) + 1} merge ranks; the merge table holds up to "
                                 f"{MAX_PAIR_RANK + 1}")
    pair_slots, rank_ids, _repeated = insert_pairs(lefts, rights, ranks, ids, pow2_at_least(2 * max(len(lefts), 1)))
    # read-only from here: the build kernels below then share their merge kernels' variant with encoding
    _readonly(tok_bytes, offsets, byte_ids, pair_slots, rank_ids, ordinary, slots, slot_hash)

    byte_pairs = build_byte_pairs(byte_ids, pair_slots, rank_ids)
    pair_bloom = build_pair_bloom(pair_slots, min(pow2_at_least(len(lefts) * BLOOM_BITS_PER_PAIR // 64), 1 << 24))
    stage1, stage2, uversion = class_tables_for(model.pattern_kind)
    root, starts, ebyte, echild, token_at = _build_trie(added_contents)
    added_ids = np.array([t.id for t in model.added_tokens], dtype=np.int32)
    char_bpe, tok_flags, crank, split_l, split_r, trees = _merge_trees(
        tok_bytes, offsets, byte_ids, pair_slots, rank_ids, ordinary, not model.char_level)
    unreach_filter = unreachable_filter(by_id, ordinary & ((tok_flags & F_REACH) == 0))
    config = TableConfig(pattern_kind=PATTERN_CODES[model.pattern_kind], ignore_merges=model.ignore_merges,
                         use_cache=use_cache, trees=trees).array()
    made = rank_ids >= 0
    if np.array_equal(rank_ids[made], np.flatnonzero(made)):
        # every merge of rank r makes token r (tiktoken files): an empty table tells pair_lookup so,
        # which saves it a dependent load per probe
        rank_ids = np.empty(0, dtype=np.int32)
    arrays = (tok_bytes, offsets, slots, slot_hash, short_vocab, pair_slots, rank_ids, pair_bloom, byte_ids, byte_pairs, root, starts, ebyte,
              echild, token_at, added_ids, char_bpe, tok_flags, crank, split_l, split_r, unreach_filter, config, valid)
    _readonly(*arrays)
    tables = Tables(tok_bytes, offsets, slots, slot_hash, short_vocab, pair_slots, rank_ids, pair_bloom, byte_ids, byte_pairs, stage1, stage2,
                    root, starts, ebyte, echild, token_at, added_ids, char_bpe, tok_flags, crank, split_l, split_r,
                    unreach_filter, config)
    return Compiled(_on_huge_pages(tables), valid, n_vocab, list(model.added_tokens), uversion)
