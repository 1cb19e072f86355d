"""The kernel behind `Encoding.encode_batch_padded`: rows of ragged ids into one fixed-shape batch."""

from __future__ import annotations

from .jit import njit


@njit
def fill_padded(values, starts, counts, prefix, suffix, pad_id, left, ids, mask, lengths):
    """Row r of `ids` [R, L] = prefix, values[starts[r]:starts[r] + counts[r]], suffix, padded with
    `pad_id` to L on the left (`left`) or the right; `mask` is 1 on the real tokens and 0 on the
    padding, `lengths[r]` the number of real tokens. The caller guarantees every row fits L and every
    window lies inside `values`."""
    n_rows, width = ids.shape
    n_pre = len(prefix)
    n_suf = len(suffix)
    for r in range(n_rows):
        n = counts[r]
        real = n_pre + n + n_suf
        c = 0
        if left:
            while c < width - real:
                ids[r, c] = pad_id
                mask[r, c] = 0
                c += 1
        for k in range(n_pre):
            ids[r, c] = prefix[k]
            mask[r, c] = 1
            c += 1
        s = starts[r]
        for k in range(n):
            ids[r, c] = values[s + k]
            mask[r, c] = 1
            c += 1
        for k in range(n_suf):
            ids[r, c] = suffix[k]
            mask[r, c] = 1
            c += 1
        while c < width:
            ids[r, c] = pad_id
            mask[r, c] = 0
            c += 1
        lengths[r] = real
