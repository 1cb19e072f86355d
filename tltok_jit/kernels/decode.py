"""Token ids -> bytes. Ids are validated by the caller (0 <= id < n_vocab, assigned)."""

from __future__ import annotations

import numpy as np

from .jit import njit


@njit
def gather_bytes(ids, tok_bytes, tok_offsets):
    total = 0
    for i in range(len(ids)):
        t = ids[i]
        total += tok_offsets[t + 1] - tok_offsets[t]
    out = np.empty(total, dtype=np.uint8)
    p = 0
    for i in range(len(ids)):
        t = ids[i]
        a = tok_offsets[t]
        b = tok_offsets[t + 1]
        for k in range(a, b):
            out[p] = tok_bytes[k]
            p += 1
    return out
