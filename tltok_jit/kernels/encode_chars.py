"""Kernels for the Hugging Face pipelines that the byte-level encode loop does not cover.

* `rows_with_bytes`: which rows hold a byte of a set (those go through Python's text path).
* `split_added`: every allowed added token of a text at once (leftmost-longest, as `encode_span`
  finds them), so Python can normalize the text between them segment by segment.
* `encode_rows_plain`: rows encoded one by one with the tables' own pretokenizer kind (with
  PAT_WHOLE tables: one row = one piece, for pieces a Python pretokenizer made).
* `encode_chars_rows`: SentencePiece-style BPE (Mistral-7B, Llama-2 HF files): each row is ONE word
  whose initial symbols are its characters looked up in the vocabulary; a character that is not a
  token falls back to its UTF-8 bytes as `<0xNN>` tokens (byte_fallback), else to the unknown token
  (consecutive unknowns fused when fuse_unk). Then the ordinary merge (lowest rank, leftmost).

The byte-level path (`kernels/encode.py`) is untouched: these kernels are only reached through
`Encoding` objects loaded from tokenizer.json files that need them.
"""

from __future__ import annotations

import numpy as np

from .encode import added_trie, encode_ordinary_span, next_added
from .hashing import hash_bytes, vocab_lookup
from .jit import njit
from .merge import merge_symbols
from .utf8 import decode_cp, skip_unflagged8


@njit
def split_added(buf, T, allowed):
    """All leftmost-longest occurrences of the added tokens flagged in `allowed`:
    (starts int64[k], ends int64[k], token index int64[k])."""
    n = len(buf)
    starts = np.empty(16, dtype=np.int64)
    ends = np.empty(16, dtype=np.int64)
    idx = np.empty(16, dtype=np.int64)
    k = 0
    i = 0
    trie = added_trie(T)
    while i < n:
        i, t, ln = next_added(buf, i, n, trie, allowed)
        if t < 0:
            break
        if k == len(starts):
            starts = np.concatenate((starts, np.empty(k, dtype=np.int64)))
            ends = np.concatenate((ends, np.empty(k, dtype=np.int64)))
            idx = np.concatenate((idx, np.empty(k, dtype=np.int64)))
        starts[k] = i
        ends[k] = i + ln
        idx[k] = t
        k += 1
        i += ln
    return starts[:k], ends[:k], idx[:k]


@njit
def encode_rows_plain(data, offsets, T, out, counts, cache, vals):
    """Row r = data[offsets[r]:offsets[r+1]] encoded without added tokens (the pretokenizer of
    T.config); its ids go to out[offsets[r] - offsets[0]:], their number to counts[r]."""
    base = offsets[0]
    for r in range(len(offsets) - 1):
        a = offsets[r]
        op0 = a - base
        op = encode_ordinary_span(data, a, offsets[r + 1], T, out, op0, cache, 0, vals)
        counts[r] = op - op0


@njit
def encode_chars_rows(data, offsets, T, fallback_ids, unk_id, fuse_unk, out, counts, vals):
    """SentencePiece-style BPE of each row as one word (see the module docstring).

    fallback_ids: int32[256], the id of `<0xNN>` for each byte, or -1 (byte fallback is used for a
    character only when all its bytes have one; all -1 disables it). unk_id < 0: unknown characters
    are dropped (HF without unk_token). Row r's ids go to out[offsets[r] - offsets[0]:]: a row of
    n bytes never yields more than n ids."""
    base = offsets[0]
    slots = T.vocab_slots
    slot_hash = T.vocab_hash
    tok_bytes = T.tok_bytes
    tok_offsets = T.tok_offsets
    for r in range(len(offsets) - 1):
        a = offsets[r]
        e = offsets[r + 1]
        op0 = a - base
        m = 0
        unk_pending = False
        i = a
        while i < e:
            cp, ln = decode_cp(data, i, e)
            t = vocab_lookup(data, i, i + ln, hash_bytes(data, i, i + ln), slots, slot_hash, tok_bytes, tok_offsets)
            if t >= 0:
                if unk_pending:
                    out[op0 + m] = unk_id
                    m += 1
                    unk_pending = False
                out[op0 + m] = t
                m += 1
                i += ln
                continue
            ok = True
            for k in range(ln):
                if fallback_ids[data[i + k]] < 0:
                    ok = False
                    break
            if ok:
                # HF adds the byte tokens without flushing a pending unknown first (kept as is)
                for k in range(ln):
                    out[op0 + m] = fallback_ids[data[i + k]]
                    m += 1
            elif unk_id >= 0:
                if unk_pending and not fuse_unk:
                    out[op0 + m] = unk_id
                    m += 1
                unk_pending = True
            i += ln
        if unk_pending:
            out[op0 + m] = unk_id
            m += 1
        counts[r] = merge_symbols(out, op0, m, T.pair_slots, T.rank_ids, vals)


@njit
def pack_rows(out, offsets, counts, dst):
    """Concatenate row r's counts[r] ids (at out[offsets[r] - offsets[0]:]) into dst; returns the total."""
    base = offsets[0]
    p = 0
    for r in range(len(counts)):
        src = offsets[r] - base
        for k in range(counts[r]):
            dst[p + k] = out[src + k]
        p += counts[r]
    return p


@njit
def rows_with_bytes(lut, data, offsets, out):
    """out[r] = whether row r, data[offsets[r]:offsets[r + 1]], holds a byte b with lut[b] != 0 (lut:
    uint8[256]). Eight bytes at a time while none is flagged; a row stops at its first flagged byte."""
    for r in range(len(offsets) - 1):
        e = offsets[r + 1]
        i = skip_unflagged8(lut, data, offsets[r], e)
        hit = False
        while i < e:
            if lut[data[i]] != 0:
                hit = True
                break
            i += 1
        out[r] = hit
