"""The named tuple of table arrays every kernel takes (`T`), as `tables.compile_model` fills it."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Tables(NamedTuple):
    tok_bytes: np.ndarray  # uint8: all token bytes, id order
    tok_offsets: np.ndarray  # int64[n_vocab + 1]
    vocab_slots: np.ndarray  # int32 hash slots of ordinary tokens (-1 empty)
    vocab_hash: np.ndarray  # uint64 hash per slot
    short_vocab: np.ndarray  # uint64[4 * capacity]: ordinary tokens of <= 16 bytes, keyed by their bytes
    pair_slots: np.ndarray  # uint64 (left << 44 | right << 24 | rank), all-ones empty
    rank_ids: np.ndarray  # int32[max rank + 1]: the token a merge of that rank makes; empty: the rank itself
    pair_bloom: np.ndarray  # uint64[2**k]: Bloom filter of the merge table's pairs (hashing.bloom_may_have)
    byte_ids: np.ndarray  # int32[256]: the token of each single byte
    byte_pairs: np.ndarray  # int64[65536]: merge value (rank << 32 | id) of byte pair x << 8 | y, or max
    stage1: np.ndarray  # uint16 character-class table, stage 1
    stage2: np.ndarray  # uint8 character-class table, stage 2
    trie_root: np.ndarray  # int32[256]: node after the first byte of an added token, or -1
    trie_edge_start: np.ndarray  # int32[n_nodes + 1]
    trie_edge_byte: np.ndarray  # uint8[n_edges]
    trie_edge_child: np.ndarray  # int32[n_edges]
    trie_token: np.ndarray  # int32[n_nodes]: index of the added token ending here, or -1
    added_ids: np.ndarray  # int32[n_added]
    char_bpe: np.ndarray  # uint64[65536]: each 1-3 byte character's own BPE (trees.char_bpe_table)
    tok_flags: np.ndarray  # uint8[n_vocab]: trees.F_* bits (F_REACH: merging t's bytes gives [t])
    crank: np.ndarray  # int64[n_vocab]: rank of the last merge of t's own BPE, -1 for a byte
    split_l: np.ndarray  # int32[n_vocab]: left part of that merge
    split_r: np.ndarray  # int32[n_vocab]: right part
    unreach_filter: np.ndarray  # uint64[2**14]: bit set per (length & 15, first, last byte) of unreachable tokens
    config: np.ndarray  # int64[4]: pattern kind, ignore_merges, use_cache, TREES_* bits
