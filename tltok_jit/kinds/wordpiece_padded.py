"""Fixed-shape batches of a WordPiece tokenizer: single texts or text pairs, as `tokenizers`' `encode_batch`.

`encode_batch_padded(tok, texts, pairs=None, ...)` gives the ids, type ids and attention mask of
`Tokenizer.encode_batch(texts or list(zip(texts, pairs)), add_special_tokens=...)` once truncation
and padding are enabled as the call says, and with the file's own `truncation` / `padding` where it
says nothing (as `encode_batch` applies them):

* `truncation`: None (the file's, else none), False, True (the file's strategy, else longest_first)
  or a strategy: "longest_first", "only_first", "only_second". It cuts to `max_length` (None: the
  file's) minus the ids the template adds when `add_special_tokens`; pairs are cut by HF's
  `truncate_encodings` rules; `stride` / `return_overflowing_tokens` give single texts their
  overflow windows (`tltok_jit.padding.windows`; refused for pairs).
* `padding`: None (the file's, else "longest"), "longest", "max_length" (to `max_length`, None: the
  file's fixed length) or "do_not_pad"; then rounded up to `pad_to_multiple_of`. `pad_id`,
  `pad_type_id`, `padding_side`, `truncation_side` default to the file's.

Where HF would give ragged rows (a row longer than a fixed length, "do_not_pad" with rows of several
lengths) or fails (a pair that only_first / only_second cannot cut enough), `PaddingError` is raised.
"""

from __future__ import annotations

import numpy as np

from ..errors import PaddingError
from ..kernels.padding import fill_padded
from ..kernels.wordpiece import _ro, fill_pairs
from ..padding import PaddedBatch, windows

__all__ = ["encode_batch_padded"]

_STRATEGIES = ("longest_first", "only_first", "only_second")


def _count(v, arg: str, least: int) -> int | None:
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or int(v) < least:
        raise PaddingError(f"{arg} must be an int of at least {least}, not {v!r}", arg)
    return int(v)


def _side(v, arg: str) -> str:
    if v not in ("left", "right"):
        raise PaddingError(f"{arg} must be 'left' or 'right', not {v!r}", arg)
    return v


def _encode(tok, texts, threads):
    """(ids, starts, counts) of a list of str or a string column without nulls."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"texts must be a list of str or a string column, not one {type(texts).__name__}")
    if isinstance(texts, (list, tuple)):
        for r, t in enumerate(texts):
            if not isinstance(t, str):
                raise PaddingError(f"texts[{r}] is {t!r}: every row must be a str", "texts", r)
        ids, off = tok.encode_batch_to_numpy(texts, num_threads=threads)
        return ids, off[:-1], np.diff(off)
    import pyarrow as pa

    res = tok.encode_arrow(texts, num_threads=threads)
    chunks = list(res.chunks) if isinstance(res, pa.ChunkedArray) else [res]
    vals, starts, counts = [], [], []
    shift = 0
    base = 0
    for c in chunks:
        if c.null_count:
            r = base + int(np.argmin(c.is_valid().to_numpy(zero_copy_only=False)))
            raise PaddingError(f"texts row {r} is null: every row must be a string", "texts", r)
        o = np.asarray(c.offsets, np.int64)
        vals.append(c.values.to_numpy())
        starts.append(o[:-1] + shift)
        counts.append(np.diff(o))
        shift += len(vals[-1])
        base += len(c)
    if not vals:
        return np.zeros(0, np.uint32), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(vals), np.concatenate(starts), np.concatenate(counts)


def _pair_lengths(n1: np.ndarray, n2: np.ndarray, limit: int, strategy: str) -> tuple[np.ndarray, np.ndarray]:
    """The kept lengths of each pair under HF's `truncate_encodings` with max_length `limit`."""
    n1 = n1.astype(np.int64)
    n2 = n2.astype(np.int64)
    total = n1 + n2
    over = total > limit
    k1 = n1.copy()
    k2 = n2.copy()
    if strategy == "longest_first":
        short = np.minimum(n1, n2)
        long_ = np.where(short > limit, short, np.maximum(short, limit - short))
        both = short + long_ > limit
        short = np.where(both, limit // 2, short)
        long_ = np.where(both, limit // 2 + limit % 2, long_)
        swap = n1 > n2
        k1 = np.where(over, np.where(swap, long_, short), n1)
        k2 = np.where(over, np.where(swap, short, long_), n2)
        # truncate never lengthens
        k1 = np.minimum(k1, n1)
        k2 = np.minimum(k2, n2)
    else:
        target = n1 if strategy == "only_first" else n2
        remove = total - limit
        bad = over & (target <= remove)
        if bad.any():
            r = int(np.argmax(bad))
            raise PaddingError(f"pair {r}: truncation={strategy!r} cannot cut it to {limit} ids (its "
                               f"{'first' if strategy == 'only_first' else 'second'} text has {int(target[r])}, "
                               f"{int(remove[r])} must go); tokenizers fails here too", "truncation", r)
        if strategy == "only_first":
            k1 = np.where(over, n1 - remove, n1)
        else:
            k2 = np.where(over, n2 - remove, n2)
    return k1, k2


def encode_batch_padded(tok, texts, pairs=None, *, max_length: int | None = None, padding: str | None = None,
                        pad_to_multiple_of: int | None = None, padding_side: str | None = None,
                        pad_id: int | None = None, pad_type_id: int | None = None, truncation=None,
                        truncation_side: str | None = None, stride: int | None = None,
                        return_overflowing_tokens: bool = False, add_special_tokens: bool = False,
                        dtype="int64", num_threads: int | None = None) -> PaddedBatch:
    """See the module docstring."""
    m = tok.model
    ftr, fpad = m.truncation, m.padding
    if not isinstance(add_special_tokens, (bool, np.bool_)):
        raise TypeError(f"add_special_tokens must be True or False, not {add_special_tokens!r}")
    dt = {"int64": np.int64, "int32": np.int32}.get(dtype if isinstance(dtype, str) else np.dtype(dtype).name)
    if dt is None:
        raise PaddingError(f"dtype must be 'int64' or 'int32', not {dtype!r}", "dtype")
    max_length = _count(max_length, "max_length", 1)
    pad_to_multiple_of = _count(pad_to_multiple_of, "pad_to_multiple_of", 1)
    is_pair = pairs is not None
    tpl = m.template
    n_added = tpl.added(is_pair) if (tpl is not None and add_special_tokens) else 0

    # truncation: the call's, else the file's
    if truncation is None:
        truncation = ftr is not None
        if ftr is not None:
            strategy = ftr.strategy
            limit = ftr.max_length if max_length is None else max_length
            stride = ftr.stride if stride is None else stride
            truncation_side = ftr.direction if truncation_side is None else truncation_side
    elif truncation is False:
        pass
    elif truncation is True or truncation in _STRATEGIES:
        strategy = (ftr.strategy if ftr is not None else "longest_first") if truncation is True else truncation
        limit = max_length if max_length is not None else (ftr.max_length if ftr is not None else None)
        if limit is None:
            raise PaddingError("truncation needs max_length (the file sets none)", "max_length")
        truncation = True
    else:
        raise PaddingError(f"truncation must be None, True, False or one of {_STRATEGIES}, not {truncation!r}",
                           "truncation")
    stride = _count(0 if stride is None else stride, "stride", 0)
    truncation_side = _side("right" if truncation_side is None else truncation_side, "truncation_side")
    if not truncation and stride:
        raise PaddingError("stride needs truncation", "stride")
    if return_overflowing_tokens and (not truncation or is_pair):
        raise PaddingError("return_overflowing_tokens needs truncation of single texts (pairs' overflow is not "
                           "supported)", "return_overflowing_tokens")
    budget = None
    if truncation:
        budget = limit - n_added
        if budget < (2 if is_pair and strategy == "longest_first" else 1):
            raise PaddingError(f"max_length={limit} leaves no room for text: the template adds {n_added} ids",
                               "max_length")
        if not is_pair and stride >= budget:
            raise PaddingError(f"stride={stride} must be less than the {budget} text ids a row holds", "stride")
        if not is_pair and strategy == "only_second":
            raise PaddingError("truncation='only_second' needs pairs (tokenizers fails here too)", "truncation")

    # padding: the call's, else the file's
    if padding is None:
        if fpad is not None:
            padding = "longest" if fpad.length is None else "max_length"
            width_fixed = fpad.length
            pad_to_multiple_of = fpad.pad_to_multiple_of if pad_to_multiple_of is None else pad_to_multiple_of
            padding_side = fpad.direction if padding_side is None else padding_side
        else:
            padding = "longest"
            width_fixed = None
    elif padding in ("longest", "do_not_pad"):
        width_fixed = None
    elif padding == "max_length":
        width_fixed = max_length if max_length is not None else (fpad.length if fpad is not None else None)
        if width_fixed is None:
            raise PaddingError("padding='max_length' needs max_length (the file sets no fixed length)", "max_length")
    else:
        raise PaddingError(f"padding must be None, 'longest', 'max_length' or 'do_not_pad', not {padding!r}",
                           "padding")
    padding_side = _side("right" if padding_side is None else padding_side, "padding_side")
    if pad_id is None and fpad is not None:
        pad_id = fpad.pad_id
    if pad_type_id is None:
        pad_type_id = fpad.pad_type_id if fpad is not None else 0
    if pad_id is not None:
        pad_id = _count(pad_id, "pad_id", 0)
        if pad_id >= tok.vocab_size:
            raise PaddingError(f"pad_id must be a token id in [0, {tok.vocab_size}), not {pad_id}", "pad_id")
    pad_type_id = _count(pad_type_id, "pad_type_id", 0)

    # encode
    a_ids, a_starts, a_counts = _encode(tok, texts, num_threads)
    if is_pair:
        b_ids, b_starts, b_counts = _encode(tok, pairs, num_threads)
        if len(b_counts) != len(a_counts):
            raise PaddingError(f"pairs has {len(b_counts)} rows, texts {len(a_counts)}", "pairs")

    # the template's pieces and type ids
    def piece_ids(pieces):
        ids = [i for p in pieces for i in p[1]]
        types = [p[2] for p in pieces for _ in p[1]]
        return np.array(ids, np.uint32), np.array(types, np.uint32)

    # a pair's second text is encoded with type id 1; a template sets both (with or without its tokens)
    seq_types = {"A": 0, "B": 1}
    if tpl is not None:
        for p in (tpl.pair if is_pair else tpl.single):
            if p[0] in seq_types:
                seq_types[p[0]] = p[2]
        pieces = tpl.pair if is_pair else tpl.single
    else:
        pieces = (("A", (), 0), ("B", (), 0)) if is_pair else (("A", (), 0),)
    if not add_special_tokens:
        pieces = tuple(p for p in pieces if p[0] != "ids")
    ka = next(k for k, p in enumerate(pieces) if p[0] == "A")
    kb = next(k for k, p in enumerate(pieces) if p[0] == "B") if is_pair else ka
    pre, pre_t = piece_ids(pieces[:ka])
    mid, mid_t = piece_ids(pieces[ka + 1:kb])
    suf, suf_t = piece_ids(pieces[kb + 1:])

    # truncation: the window each output row keeps
    left_cut = truncation_side == "left"
    if is_pair:
        if truncation:
            k1, k2 = _pair_lengths(a_counts, b_counts, budget, strategy)
        else:
            k1, k2 = a_counts, b_counts
        sample = np.arange(len(a_counts), dtype=np.int64)
        a_start = a_starts + (a_counts - k1 if left_cut else 0)
        b_start = b_starts + (b_counts - k2 if left_cut else 0)
        real = k1 + k2 + len(pre) + len(mid) + len(suf)
    else:
        sample, start, stop = windows(a_counts, budget, stride, left_cut, bool(return_overflowing_tokens))
        k1 = stop - start
        a_start = a_starts[sample] + start
        real = k1 + len(pre) + len(suf)

    # the width
    n_rows = len(real)
    longest = int(real.max()) if n_rows else 0
    width = width_fixed if width_fixed is not None else longest
    if padding == "do_not_pad" and n_rows and int(real.min()) != longest:
        r = int(np.argmax(real != real[0]))
        raise PaddingError(f"padding='do_not_pad' needs rows of one length: row {int(sample[0])} has {int(real[0])} "
                           f"ids, row {int(sample[r])} {int(real[r])}", "padding", int(sample[r]))
    if pad_to_multiple_of is not None and width % pad_to_multiple_of:
        width += pad_to_multiple_of - width % pad_to_multiple_of
    if longest > width:
        r = int(np.argmax(real > width))
        raise PaddingError(f"row {int(sample[r])} has {int(real[r])} ids, more than the padded length {width}; "
                           "pass truncation=True to cut it (tokenizers would return it longer)", "max_length",
                           int(sample[r]))
    if pad_id is None and n_rows and int(real.min()) < width:
        r = int(np.argmin(real))
        raise PaddingError(f"row {int(sample[r])} needs padding and pad_id is not set (the file has no padding): "
                           "pass pad_id", "pad_id", int(sample[r]))

    ids = np.empty((n_rows, width), dt)
    mask = np.empty((n_rows, width), dt)
    types = np.empty((n_rows, width), dt)
    lengths = np.empty(n_rows, dt)
    left = padding_side == "left"
    pad = np.int64(pad_id or 0)
    if n_rows:
        if is_pair:
            fill_pairs(_ro(a_ids.astype(np.uint32, copy=False)), _ro(a_start), _ro(k1),
                       _ro(b_ids.astype(np.uint32, copy=False)), _ro(b_start), _ro(k2), _ro(pre), _ro(pre_t),
                       np.int64(seq_types["A"]), _ro(mid), _ro(mid_t), np.int64(seq_types["B"]), _ro(suf), _ro(suf_t),
                       pad, np.int64(pad_type_id), left, ids, types, mask, lengths)
        else:
            values = _ro(a_ids.astype(np.uint32, copy=False))
            fill_padded(values, _ro(a_start), _ro(k1), _ro(pre), _ro(suf), pad, left, ids, mask, lengths)
            # the type ids: the same fill over a run of the sequence's type id
            run = _ro(np.full(max(int(k1.max()), 1), seq_types["A"], np.uint32))
            scratch = np.empty((n_rows, width), dt)
            fill_padded(run, _ro(np.zeros(n_rows, np.int64)), _ro(k1), _ro(pre_t), _ro(suf_t),
                        np.int64(pad_type_id), left, types, scratch, np.empty(n_rows, dt))
    mapping = sample.astype(dt) if return_overflowing_tokens else None
    return PaddedBatch(input_ids=ids, attention_mask=mask, lengths=lengths, overflow_to_sample_mapping=mapping,
                       token_type_ids=types)
