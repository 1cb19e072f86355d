"""The kernels behind `encode_batch_padded`: rows of ragged ids (single texts, or pairs with type ids)
into one fixed-shape batch."""

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


@njit
def fill_pairs(a_vals, a_starts, a_counts, b_vals, b_starts, b_counts, pre, pre_t, a_type, mid, mid_t, b_type, suf,
               suf_t, pad_id, pad_type, left, ids, types, mask, lengths):
    """Row r of ids / types [R, L] = pre, a_vals[a_starts[r]:+a_counts[r]], mid, b_vals[b_starts[r]:
    +b_counts[r]], suf (type ids: pre_t, a_type, mid_t, b_type, suf_t), padded on the left (`left`)
    or the right with pad_id / pad_type; mask 1 on the real ids; lengths[r] their number. The caller
    guarantees every row fits L and every window lies inside its values."""
    n_rows, width = ids.shape
    for r in range(n_rows):
        na = a_counts[r]
        nb = b_counts[r]
        real = len(pre) + na + len(mid) + nb + len(suf)
        lo = width - real if left else 0
        row = ids[r]
        trow = types[r]
        m = mask[r]
        row[:] = pad_id
        trow[:] = pad_type
        m[:] = 0
        m[lo:lo + real] = 1
        lengths[r] = real
        k = lo
        for j in range(len(pre)):
            row[k] = pre[j]
            trow[k] = pre_t[j]
            k += 1
        s = a_starts[r]
        for j in range(na):
            row[k] = a_vals[s + j]
            trow[k] = a_type
            k += 1
        for j in range(len(mid)):
            row[k] = mid[j]
            trow[k] = mid_t[j]
            k += 1
        s = b_starts[r]
        for j in range(nb):
            row[k] = b_vals[s + j]
            trow[k] = b_type
            k += 1
        for j in range(len(suf)):
            row[k] = suf[j]
            trow[k] = suf_t[j]
            k += 1


def warm() -> None:
    """Compile (or load) both fills once for each output dtype, with production's argument types:
    inputs read-only, outputs writable, scalars int64."""
    import numpy as np

    def ro(a):
        a = a.view()
        a.flags.writeable = False
        return a

    u32 = ro(np.zeros(2, np.uint32))
    i64 = ro(np.zeros(1, np.int64))
    for dt in (np.int64, np.int32):
        fill_padded(u32, i64, i64, u32, u32, np.int64(0), False, np.empty((1, 8), dt), np.empty((1, 8), dt),
                    np.empty(1, dt))
        fill_pairs(u32, i64, i64, u32, i64, i64, u32, u32, np.int64(0), u32, u32, np.int64(1), u32, u32, np.int64(0),
                   np.int64(0), False, np.empty((1, 8), dt), np.empty((1, 8), dt), np.empty((1, 8), dt),
                   np.empty(1, dt))
