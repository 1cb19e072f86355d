"""pandas in, pandas out for `Encoding.encode_arrow` / `count_arrow`: a Series of id lists (None for
a null row) or of `Int64` counts (<NA> for a null row), with the input's index and name. pandas is
never imported unless a pandas object is given."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def is_pandas_series(obj) -> bool:
    return type(obj).__module__.partition(".")[0] == "pandas" and hasattr(obj, "index") and hasattr(obj, "name")


def _chunks(result) -> list:
    return list(result.chunks) if hasattr(result, "chunks") else [result]


def ids_series(result, like, to_list: Callable[[np.ndarray], list[int]]):
    """A list<uint32> Arrow result as an object Series of Python lists (None for null rows)."""
    import pandas as pd

    rows: list = []
    for chunk in _chunks(result):
        offsets = np.asarray(chunk.offsets)
        values = chunk.values.to_numpy(zero_copy_only=False)
        flat = to_list(values[offsets[0]:offsets[-1]]) if len(offsets) else []
        o = (offsets - offsets[0]).tolist()
        valid = chunk.is_valid().to_numpy(zero_copy_only=False) if chunk.null_count else None
        if valid is None:
            rows.extend(flat[o[i]:o[i + 1]] for i in range(len(chunk)))
        else:
            rows.extend(flat[o[i]:o[i + 1]] if valid[i] else None for i in range(len(chunk)))
    out = pd.Series(rows, dtype=object, name=like.name)
    out.index = like.index
    return out


def counts_series(result, like):
    """An int64 Arrow result as an `Int64` Series (<NA> for null rows)."""
    import pandas as pd
    import pyarrow as pa

    chunks = _chunks(result)
    counts = pa.chunked_array(chunks, type=pa.int64()).to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
    counts = counts.astype("Int64")  # also for an empty result
    counts.name = like.name
    counts.index = like.index
    return counts
