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
        # slice assignments: numba lowers them to vector loops (a store per [r, c] element was not
        # vectorized)
        n = counts[r]
        real = n_pre + n + n_suf
        lo = width - real if left else 0
        hi = lo + real
        row = ids[r]
        row[:lo] = pad_id
        row[lo:lo + n_pre] = prefix
        s = starts[r]
        row[lo + n_pre:hi - n_suf] = values[s:s + n]
        row[hi - n_suf:hi] = suffix
        row[hi:] = pad_id
        m = mask[r]
        m[:lo] = 0
        m[lo:hi] = 1
        m[hi:] = 0
        lengths[r] = real
