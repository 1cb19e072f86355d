"""Fixed-shape batches: `Encoding.encode_batch_padded` and its result, `PaddedBatch`.

The rules are Hugging Face `tokenizers`' for `Tokenizer.encode_batch(texts, add_special_tokens=...)`
after `enable_truncation(max_length, stride=stride, strategy="longest_first", direction=truncation_side)`
and `enable_padding(direction=padding_side, pad_id=pad_id, pad_to_multiple_of=pad_to_multiple_of,
length=max_length if padding == "max_length" else None)`, with each encoding followed by its
`overflowing` windows (as transformers' fast tokenizers flatten them for `overflow_to_sample_mapping`):

* truncation: with `add_special_tokens`, the ids of a text are cut to `max_length` minus the number
  of ids the post-processor's single-sequence template adds (the budget), then the template goes
  around each window. A text longer than the budget gives windows of `budget` ids, each starting
  `budget - stride` after the previous one (`truncation_side="left"`: built from the end, each ending
  `budget - stride` before the next), the last one cut short; the first window is the row, the
  others its overflow rows (only with `return_overflowing_tokens`).
* padding "longest": every row is padded to the longest row of the batch, "max_length": to
  `max_length`; either rounded up to a multiple of `pad_to_multiple_of`. "do_not_pad": the rows
  must already have one length (HF would return ragged rows; an array cannot hold them).

Where HF would return ragged rows the call raises instead: `padding="max_length"` without truncation
and a row longer than `max_length` (rounded up to `pad_to_multiple_of`, as HF pads to that length):
a `PaddingError` naming the row. So does a null row, and `pad_id=None` when a row needs padding. An
argument that has no effect in the call (`max_length` with neither truncation nor "max_length"
padding, `stride` without truncation, `pad_to_multiple_of` with "do_not_pad") is refused rather than
ignored. `stride` is checked against the budget of the call (HF checks it against `max_length` minus
the template's ids even when `add_special_tokens=False`). Options belong to the call: nothing is
stored on the (shared) Encoding.

Pairs and a file's own settings (`template_batch`; a tokenizer.json's `truncation` / `padding`, or
`pairs=`, or a truncation strategy by name): the rows are `encode_batch(list(zip(texts, pairs)))`'s,
`token_type_ids` included, under HF's rules:

* `truncation`: None (the file's, else none), False, True (the file's strategy, else longest_first)
  or a strategy: "longest_first", "only_first", "only_second". It cuts to `max_length` (None: the
  file's) minus the ids the template adds when `add_special_tokens`; pairs are cut by HF's
  `truncate_encodings` rules; `stride` / `return_overflowing_tokens` give single texts their
  overflow windows (refused for pairs).
* `padding`: None (the file's, else "longest"), "longest", "max_length" (to `max_length`, None: the
  file's fixed length) or "do_not_pad"; then rounded up to `pad_to_multiple_of`. `pad_id`,
  `pad_type_id`, `padding_side`, `truncation_side` default to the file's.
* A pair's second text has type id 1 unless the template says otherwise; without a template (null or
  `ByteLevel` post-processor) the two texts are joined as they are.
* Where HF would give ragged rows (a row longer than a fixed length, "do_not_pad" with rows of several
  lengths) or fails (a pair that only_first / only_second cannot cut enough), `PaddingError` is raised.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .engine.args import check_int, check_threads
from .errors import PaddingError  # noqa: F401 (raised here; defined with the others)
from .kernels.padding import fill_padded, fill_pairs
from .engine.arenas import Arenas
from .engine.pages import small_pages
from .engine.text import read_only_view
from .engine.threads import on_threads, resolve_threads

__all__ = ["STRATEGIES", "PaddedBatch", "PaddingError", "encode_batch_padded", "pad_rows", "split_pairs",
           "template_batch", "truncate_lists", "truncation_args", "windows"]

PADDINGS = ("longest", "max_length", "do_not_pad")
SIDES = ("left", "right")
DTYPES = {"int64": np.int64, "int32": np.int32}
STRATEGIES = ("longest_first", "only_first", "only_second")  # of a pair's truncation
_PARALLEL_CELLS = 1 << 19  # output cells per thread of the fill (fewer: a thread hand-off costs more)

# A batch's arrays are views of recycled memory (engine/arenas.py), on 4 KB pages: a first write into
# a fresh huge page can wait for the kernel to compact memory (see engine/pages.py). Batches over 8 MB
# (a one-off whole column) are not kept; smaller than 64 KB ones come from malloc's own free lists.
BATCH_ARENAS = Arenas(keep=4, most=1 << 23, pages=small_pages)


@dataclass(frozen=True, slots=True, eq=False)
class PaddedBatch:
    """A batch of equal-length rows as C-contiguous numpy arrays of one integer dtype.

    input_ids [B, L]: the ids, padded; attention_mask [B, L]: 1 on real tokens, 0 on padding;
    lengths [B]: the real tokens of each row; overflow_to_sample_mapping [B]: the input row each row
    comes from (only with `return_overflowing_tokens`, else None); token_type_ids: None (single
    sequences). `torch.from_dlpack(batch.input_ids)` shares the memory.

    input_ids and attention_mask are views of one buffer; a later batch may reuse that buffer
    once no array (or tensor) refers to it any more (a few buffers of up to 8 MB are kept)."""

    input_ids: np.ndarray
    attention_mask: np.ndarray
    lengths: np.ndarray
    overflow_to_sample_mapping: np.ndarray | None = None
    token_type_ids: np.ndarray | None = None

    def __len__(self) -> int:
        return self.input_ids.shape[0]


def _choice(value, arg: str, allowed) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise PaddingError(f"{arg} must be one of {', '.join(map(repr, allowed))}, not {value!r}", arg)
    return value


def _flag(value, arg: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{arg} must be True or False, not {type(value).__name__} ({value!r})")
    return bool(value)


def _optional_count(value, arg: str, least: int) -> int | None:
    if value is None:
        return None
    v = check_int(value, arg)
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{arg} must be an int, not bool")
    if v < least:
        raise PaddingError(f"{arg} must be at least {least}, not {v}", arg)
    return v


@dataclass(frozen=True, slots=True)
class _Plan:
    """The checked options of one call."""

    max_length: int | None
    padding: str
    pad_to_multiple_of: int | None
    left_pad: bool
    pad_id: int | None
    budget: int | None  # ids of a text a row holds (None: no truncation)
    left_cut: bool
    stride: int
    overflow: bool
    dtype: type


def _plan(n_vocab: int, n_added: int, *, max_length, padding, pad_to_multiple_of, padding_side, pad_id,
          truncation, truncation_side, stride, return_overflowing_tokens, dtype) -> _Plan:
    padding = _choice(padding, "padding", PADDINGS)
    padding_side = _choice(padding_side, "padding_side", SIDES)
    truncation_side = _choice(truncation_side, "truncation_side", SIDES)
    if isinstance(dtype, str):
        dt = DTYPES.get(dtype)
    else:
        try:
            dt = np.dtype(dtype).type
        except TypeError:
            dt = None
    if dt not in (np.int64, np.int32):
        raise PaddingError(f"dtype must be 'int64' or 'int32', not {dtype!r}", "dtype")
    truncation = _flag(truncation, "truncation")
    overflow = _flag(return_overflowing_tokens, "return_overflowing_tokens")
    max_length = _optional_count(max_length, "max_length", 1)
    pad_to_multiple_of = _optional_count(pad_to_multiple_of, "pad_to_multiple_of", 1)
    stride = check_int(stride, "stride")
    if isinstance(stride, (bool, np.bool_)) or stride < 0:
        raise PaddingError(f"stride must be an int of at least 0, not {stride!r}", "stride")
    if pad_id is not None:
        if isinstance(pad_id, (bool, np.bool_)):
            raise TypeError("pad_id must be an int, not bool")
        pad_id = check_int(pad_id, "pad_id")
        if not 0 <= pad_id < n_vocab:
            raise PaddingError(f"pad_id must be a token id in [0, {n_vocab}), not {pad_id}", "pad_id")
    if max_length is None and (truncation or padding == "max_length"):
        why = "truncation=True" if truncation else "padding='max_length'"
        raise PaddingError(f"{why} needs max_length", "max_length")
    if max_length is not None and not truncation and padding != "max_length":
        raise PaddingError("max_length has no effect here: pass truncation=True or padding='max_length' "
                           "(or leave max_length out)", "max_length")
    if pad_to_multiple_of is not None and padding == "do_not_pad":
        raise PaddingError("pad_to_multiple_of has no effect with padding='do_not_pad'", "pad_to_multiple_of")
    budget = None
    if truncation:
        budget = max_length - n_added
        if budget < 1:
            raise PaddingError(f"max_length={max_length} leaves no room for text: the template adds {n_added} "
                               f"ids (max_length must be at least {n_added + 1})", "max_length")
        if stride >= budget:
            raise PaddingError(f"stride={stride} must be less than the {budget} text ids a row holds "
                               f"(max_length {max_length} - {n_added} ids the template adds)", "stride")
    elif stride:
        raise PaddingError("stride needs truncation=True", "stride")
    return _Plan(max_length=max_length, padding=padding, pad_to_multiple_of=pad_to_multiple_of,
                 left_pad=padding_side == "left", pad_id=pad_id, budget=budget, left_cut=truncation_side == "left",
                 stride=stride, overflow=overflow, dtype=dt)


def windows(counts: np.ndarray, budget: int | None, stride: int, left: bool,
            overflow: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sample, start, stop) of every output row: row i holds ids [start, stop) of input row
    sample[i]; an input row longer than `budget` gives its first window, then (`overflow`) the
    others, as `Encoding::truncate` of HF tokenizers cuts them."""
    counts = np.asarray(counts, dtype=np.int64)
    n = len(counts)
    if budget is None:
        return np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64), counts
    step = budget - stride
    k = None
    if overflow:
        k = np.ones(n, dtype=np.int64)
        cut = counts > budget
        k[cut] += (counts[cut] - budget + step - 1) // step
    if k is None or not len(k) or k.max() == 1:  # one window a row: its first
        sample = np.arange(n, dtype=np.int64)
        if left:
            return sample, np.maximum(counts - budget, 0), counts
        return sample, np.zeros(n, dtype=np.int64), np.minimum(counts, budget)
    sample = np.repeat(np.arange(n, dtype=np.int64), k)
    j = np.arange(len(sample), dtype=np.int64) - np.repeat(np.cumsum(k) - k, k)
    total = counts[sample]
    if left:
        stop = total - j * step
        start = np.maximum(stop - budget, 0)
    else:
        start = j * step
        stop = np.minimum(start + budget, total)
    return sample, start, stop


def pad_rows(values: np.ndarray, offsets: np.ndarray, prefix=(), suffix=(), *, n_vocab: int,
             max_length: int | None = None, padding: str = "longest", pad_to_multiple_of: int | None = None,
             padding_side: str = "right", pad_id: int | None = None, truncation: bool = False,
             truncation_side: str = "right", stride: int = 0, return_overflowing_tokens: bool = False,
             dtype="int64", num_threads: int | None = None) -> PaddedBatch:
    """A PaddedBatch of ragged rows: row r's ids are values[offsets[r]:offsets[r + 1]], `prefix` /
    `suffix` the ids the template puts around each row (empty: add_special_tokens=False). The other
    arguments are `encode_batch_padded`'s."""
    n_added = len(prefix) + len(suffix)
    plan = _plan(n_vocab, n_added, max_length=max_length, padding=padding, pad_to_multiple_of=pad_to_multiple_of,
                 padding_side=padding_side, pad_id=pad_id, truncation=truncation, truncation_side=truncation_side,
                 stride=stride, return_overflowing_tokens=return_overflowing_tokens, dtype=dtype)
    offsets = np.asarray(offsets, dtype=np.int64)
    return _pad(values, offsets[:-1], np.diff(offsets), prefix, suffix, plan, check_threads(num_threads))


def _pad(values: np.ndarray, row_starts: np.ndarray, row_counts: np.ndarray, prefix, suffix, plan: _Plan,
         num_threads: int | None) -> PaddedBatch:
    """The batch of input rows values[row_starts[r]:row_starts[r] + row_counts[r]] under `plan`."""
    prefix = read_only_view(np.asarray(prefix, dtype=np.uint32).reshape(-1))
    suffix = read_only_view(np.asarray(suffix, dtype=np.uint32).reshape(-1))
    n_added = len(prefix) + len(suffix)
    values = read_only_view(np.ascontiguousarray(values, dtype=np.uint32))
    sample, start, stop = windows(row_counts, plan.budget, plan.stride, plan.left_cut, plan.overflow)
    counts = stop - start
    real = counts + n_added
    width = int(real.max()) if len(real) else 0
    longest = width
    if plan.padding == "max_length":
        width = plan.max_length
    elif plan.padding == "do_not_pad" and len(real) and int(real.min()) != width:
        r = int(np.argmax(real != real[0]))
        raise PaddingError(f"padding='do_not_pad' needs rows of one length: row {int(sample[0])} has "
                           f"{int(real[0])} ids, row {int(sample[r])} {int(real[r])}; pass padding='longest'",
                           "padding", int(sample[r]))
    m = plan.pad_to_multiple_of
    if m is not None and width % m:
        width += m - width % m
    if longest > width:  # HF keeps such a row longer than the others
        r = int(np.argmax(real > width))
        raise PaddingError(f"row {int(sample[r])} has {int(real[r])} ids, more than max_length={plan.max_length}"
                           + (f" (rounded up to {width})" if width != plan.max_length else "")
                           + "; pass truncation=True to cut it", "max_length", int(sample[r]))
    if plan.pad_id is None and len(real) and int(real.min()) < width:
        r = int(np.argmin(real))
        raise PaddingError(f"row {int(sample[r])} needs padding ({int(real[r])} of {width} ids) and pad_id is not "
                           "set: pass pad_id", "pad_id", int(sample[r]))
    n_rows = len(sample)
    cells = n_rows * width
    item = np.dtype(plan.dtype).itemsize
    buf = BATCH_ARENAS.take(2 * cells * item)
    ids = buf[:cells * item].view(plan.dtype).reshape(n_rows, width)
    mask = buf[cells * item:2 * cells * item].view(plan.dtype).reshape(n_rows, width)
    del buf
    lengths = np.empty(n_rows, dtype=plan.dtype)
    if n_rows:
        starts = read_only_view(np.asarray(row_starts, dtype=np.int64)[sample] + start)
        counts = read_only_view(counts)
        pad = np.int64(plan.pad_id or 0)
        parts = min(resolve_threads(num_threads), max(1, n_rows * width // _PARALLEL_CELLS))
        bounds = [n_rows * p // parts for p in range(parts + 1)]

        def fill(w: int) -> None:
            a, b = bounds[w], bounds[w + 1]
            fill_padded(values, starts[a:b], counts[a:b], prefix, suffix, pad, plan.left_pad, ids[a:b], mask[a:b],
                        lengths[a:b])

        on_threads(parts, fill)
    mapping = sample.astype(plan.dtype) if plan.overflow else None
    return PaddedBatch(input_ids=ids, attention_mask=mask, lengths=lengths, overflow_to_sample_mapping=mapping)


def _null_row(texts) -> int | None:
    """The first None (or float NaN, pandas' missing value) of a list, or None."""
    for i, t in enumerate(texts):
        if t is None or (type(t) is float and t != t):
            return i
    return None


def _from_list(enc, texts, threads: int, allowed_special, disallowed_special):
    """(ids, row starts, row counts) of a list of str."""
    texts = texts if isinstance(texts, (list, tuple)) else list(texts)
    if not all(type(t) is str for t in texts):
        r = _null_row(texts)
        if r is not None:
            raise PaddingError(f"texts[{r}] is {texts[r]!r}, a missing row: every row must be a str", "texts", r)
    ids, offsets = enc.encode_batch_to_numpy(texts, num_threads=threads, allowed_special=allowed_special,
                                             disallowed_special=disallowed_special)
    return ids, offsets[:-1], np.diff(offsets)


def _from_arrow(enc, texts, threads: int, allowed_special, disallowed_special):
    """(ids, row starts, row counts) of a string column (Arrow, pandas, anything Arrow reads)."""
    import pyarrow as pa

    from .columns.arrow import as_arrow, is_text_type

    arr = as_arrow(texts)
    if not is_text_type(arr.type):
        raise TypeError(f"texts must hold strings, not Arrow {arr.type}")
    res = enc.encode_arrow(arr, num_threads=threads, allowed_special=allowed_special,
                           disallowed_special=disallowed_special)
    chunks = list(res.chunks) if isinstance(res, pa.ChunkedArray) else [res]
    base = 0
    for c in chunks:
        if c.null_count:
            r = base + int(np.argmin(c.is_valid().to_numpy(zero_copy_only=False)))
            raise PaddingError(f"texts row {r} is null: every row must be a string", "texts", r)
        base += len(c)
    if not chunks:
        return np.empty(0, dtype=np.uint32), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    # the offsets of a list array index its whole values child (a sliced or taken array's too)
    values = [c.values.to_numpy() for c in chunks]
    offsets = [np.asarray(c.offsets, dtype=np.int64) for c in chunks]
    if len(chunks) == 1:
        return values[0], offsets[0][:-1], np.diff(offsets[0])
    shift = np.cumsum([0] + [len(v) for v in values[:-1]])
    return (np.concatenate(values), np.concatenate([o[:-1] + s for o, s in zip(offsets, shift)]),
            np.concatenate([np.diff(o) for o in offsets]))


def encode_batch_padded(enc, texts, pairs=None, *, max_length: int | None = None, padding: str | None = None,
                        pad_to_multiple_of: int | None = None, padding_side: str | None = None,
                        pad_id: int | None = None, pad_type_id: int | None = None, truncation=None,
                        truncation_side: str | None = None, stride: int | None = None,
                        return_overflowing_tokens: bool = False, add_special_tokens: bool = False,
                        allowed_special=frozenset(), disallowed_special="all", dtype="int64",
                        num_threads: int | None = None) -> PaddedBatch:
    """`Encoding.encode_batch_padded` (see this module's docstring for the rules)."""
    add_special_tokens = _flag(add_special_tokens, "add_special_tokens")
    pipe = enc.engine.pipeline
    threads = check_threads(num_threads)
    texts, pairs = split_pairs(texts, pairs)
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"texts must be a list of str or a string column, not one {type(texts).__name__}")

    def encode(rows):
        module = type(rows).__module__.partition(".")[0]
        read = _from_arrow if (module in ("pyarrow", "pandas", "polars") or hasattr(rows, "__arrow_c_stream__")
                               or hasattr(rows, "__arrow_c_array__")) else _from_list
        return read(enc, rows, 0 if threads is None else threads, allowed_special, disallowed_special)

    if (pairs is not None or pipe.truncation is not None or pipe.padding is not None or pad_type_id is not None
            or isinstance(truncation, str)):
        return template_batch(encode, enc.n_vocab, pipe, texts, pairs, max_length=max_length, padding=padding,
                              pad_to_multiple_of=pad_to_multiple_of, padding_side=padding_side, pad_id=pad_id,
                              pad_type_id=pad_type_id, truncation=truncation, truncation_side=truncation_side,
                              stride=stride, return_overflowing_tokens=return_overflowing_tokens,
                              add_special_tokens=add_special_tokens, dtype=dtype)
    prefix, suffix = (pipe.prefix_ids, pipe.suffix_ids) if add_special_tokens else ((), ())
    # every argument is checked before any text is encoded
    plan = _plan(enc.n_vocab, len(prefix) + len(suffix), max_length=max_length,
                 padding="longest" if padding is None else padding, pad_to_multiple_of=pad_to_multiple_of,
                 padding_side="right" if padding_side is None else padding_side, pad_id=pad_id,
                 truncation=bool(truncation) if truncation is None else truncation,
                 truncation_side="right" if truncation_side is None else truncation_side,
                 stride=0 if stride is None else stride, return_overflowing_tokens=return_overflowing_tokens,
                 dtype=dtype)
    values, starts, counts = encode(texts)
    return _pad(values, starts, counts, prefix, suffix, plan, threads)


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


def split_pairs(texts, pairs):
    """(texts, pairs): a list of (a, b) tuples, as HF's `encode_batch` takes pairs, split in two."""
    if pairs is None and isinstance(texts, (list, tuple)) and texts and all(
            isinstance(t, tuple) and len(t) == 2 for t in texts):
        return [a for a, _ in texts], [b for _, b in texts]
    return texts, pairs


def template_batch(encode, n_vocab: int, settings, texts, pairs=None, *, max_length: int | None = None,
                   padding: str | None = None, pad_to_multiple_of: int | None = None,
                   padding_side: str | None = None, pad_id: int | None = None, pad_type_id: int | None = None,
                   truncation=None, truncation_side: str | None = None, stride: int | None = None,
                   return_overflowing_tokens: bool = False, add_special_tokens: bool = False,
                   dtype="int64") -> PaddedBatch:
    """The padded batch of single texts or pairs through a tokenizer.json's template and its own
    truncation / padding settings (rules: "Pairs and a file's own settings" in this module's
    docstring). `encode(texts)` gives (ids, row starts, row counts); `settings` has the file's
    `template`, `truncation` and `padding` (None each when absent)."""
    ftr, fpad = settings.truncation, settings.padding
    if not isinstance(add_special_tokens, (bool, np.bool_)):
        raise TypeError(f"add_special_tokens must be True or False, not {add_special_tokens!r}")
    dt = {"int64": np.int64, "int32": np.int32}.get(dtype if isinstance(dtype, str) else np.dtype(dtype).name)
    if dt is None:
        raise PaddingError(f"dtype must be 'int64' or 'int32', not {dtype!r}", "dtype")
    max_length = _optional_count(max_length, "max_length", 1)
    pad_to_multiple_of = _optional_count(pad_to_multiple_of, "pad_to_multiple_of", 1)
    is_pair = pairs is not None
    tpl = settings.template
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
    elif truncation is True or truncation in STRATEGIES:
        strategy = (ftr.strategy if ftr is not None else "longest_first") if truncation is True else truncation
        limit = max_length if max_length is not None else (ftr.max_length if ftr is not None else None)
        if limit is None:
            raise PaddingError("truncation needs max_length (the file sets none)", "max_length")
        truncation = True
    else:
        raise PaddingError(f"truncation must be None, True, False or one of {STRATEGIES}, not {truncation!r}",
                           "truncation")
    stride = _optional_count(0 if stride is None else stride, "stride", 0)
    truncation_side = _choice("right" if truncation_side is None else truncation_side, "truncation_side", SIDES)
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
    padding_side = _choice("right" if padding_side is None else padding_side, "padding_side", SIDES)
    if pad_id is None and fpad is not None:
        pad_id = fpad.pad_id
    if pad_type_id is None:
        pad_type_id = fpad.pad_type_id if fpad is not None else 0
    if pad_id is not None:
        pad_id = _optional_count(pad_id, "pad_id", 0)
        if pad_id >= n_vocab:
            raise PaddingError(f"pad_id must be a token id in [0, {n_vocab}), not {pad_id}", "pad_id")
    pad_type_id = _optional_count(pad_type_id, "pad_type_id", 0)

    # encode
    a_ids, a_starts, a_counts = encode(texts)
    if is_pair:
        if isinstance(pairs, (str, bytes)):
            raise TypeError(f"pairs must be a list of str or a string column, not one {type(pairs).__name__}")
        b_ids, b_starts, b_counts = encode(pairs)
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
            fill_pairs(read_only_view(a_ids.astype(np.uint32, copy=False)), read_only_view(a_start), read_only_view(k1),
                       read_only_view(b_ids.astype(np.uint32, copy=False)), read_only_view(b_start), read_only_view(k2), read_only_view(pre), read_only_view(pre_t),
                       np.int64(seq_types["A"]), read_only_view(mid), read_only_view(mid_t), np.int64(seq_types["B"]), read_only_view(suf), read_only_view(suf_t),
                       pad, np.int64(pad_type_id), left, ids, types, mask, lengths)
        else:
            values = read_only_view(a_ids.astype(np.uint32, copy=False))
            fill_padded(values, read_only_view(a_start), read_only_view(k1), read_only_view(pre), read_only_view(suf), pad, left, ids, mask, lengths)
            # the type ids: the same fill over a run of the sequence's type id
            run = read_only_view(np.full(max(int(k1.max()), 1), seq_types["A"], np.uint32))
            scratch = np.empty((n_rows, width), dt)
            fill_padded(run, read_only_view(np.zeros(n_rows, np.int64)), read_only_view(k1), read_only_view(pre_t), read_only_view(suf_t),
                        np.int64(pad_type_id), left, types, scratch, np.empty(n_rows, dt))
    mapping = sample.astype(dt) if return_overflowing_tokens else None
    return PaddedBatch(input_ids=ids, attention_mask=mask, lengths=lengths, overflow_to_sample_mapping=mapping,
                       token_type_ids=types)


def truncation_args(max_length, truncation_side) -> tuple[int, str]:
    """(max_length, truncation_side) of `encode_arrow`'s truncation, checked."""
    max_length = _optional_count(max_length, "max_length", 1)
    if max_length is None:
        raise PaddingError("truncation_side needs max_length", "max_length")
    return max_length, _choice(truncation_side, "truncation_side", SIDES)


def truncate_lists(result, max_length: int, truncation_side: str = "right"):
    """A list<uint32> / large_list<uint32> column (or a chunked one) with every row cut to its first
    (`truncation_side="right"`) or last ("left") `max_length` ids; null rows stay null. Rows that fit
    keep their ids; a column with none longer is returned as it is."""
    import pyarrow as pa

    max_length, truncation_side = truncation_args(max_length, truncation_side)
    left = truncation_side == "left"
    if isinstance(result, pa.ChunkedArray):
        return pa.chunked_array([truncate_lists(c, max_length, truncation_side) for c in result.chunks],
                                type=result.type)
    offsets = np.asarray(result.offsets)
    counts = np.diff(offsets)
    if not len(counts) or int(counts.max()) <= max_length:
        return result
    keep = np.minimum(counts, max_length)
    new_off = np.zeros(len(offsets), dtype=offsets.dtype)
    np.cumsum(keep, out=new_off[1:])
    first = offsets[:-1].astype(np.int64) + (counts - keep if left else 0)
    idx = np.repeat(first - new_off[:-1], keep) + np.arange(int(new_off[-1]), dtype=np.int64)
    values = pa.array(result.values.to_numpy()[idx], type=result.type.value_type)
    validity = result.is_valid().buffers()[1] if result.null_count else None
    return pa.Array.from_buffers(result.type, len(result), [validity, pa.py_buffer(new_off)],
                                 null_count=result.null_count, children=[values])
