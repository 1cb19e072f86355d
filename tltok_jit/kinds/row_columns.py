"""`RowColumns`: the Arrow column entry points of a kind that encodes and decodes one text at a time.

Mixed into a Tokenizer, it gives `encode_arrow`, `count_arrow` and `decode_arrow` the signatures and
conventions of the package's other column entry points (`tltok_jit.kinds.columns`): the results of
a loop over the rows with the kind's `encode` and `decode`, computed on the calling thread
(`num_threads` is accepted; the ids never depend on it). pyarrow is imported at the first call.
"""

from __future__ import annotations

import numpy as np

from ..tokenizer import EncodeNotSupportedError

__all__ = ["RowColumns"]


class RowColumns:
    """Row-at-a-time column entry points; see the module docstring."""

    def _encode_chunk(self, col, row_base: int, errors: str, counting: bool):
        from .columns import replaced_text

        counts = np.zeros(col.n, np.int64)
        rows = []
        for r in np.flatnonzero(col.valid).tolist():
            ids = self.encode(replaced_text(col.row_bytes(r), errors, row_base + r))
            counts[r] = len(ids)
            rows.append(ids)
        if counting:
            return counts, col.valid
        offsets = np.zeros(col.n + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        flat = np.fromiter((i for ids in rows for i in ids), np.uint32, count=int(offsets[-1]))
        return flat, offsets, col.valid

    def encode_arrow(self, column, *, num_threads: int | None = None, errors: str = "replace",
                     large_list: bool | None = None):
        """`encode` of every row of a text column: list<uint32> (large_list<uint32> past 2**31 - 1
        ids or with large_list=True), nulls stay null, chunks kept. A row that is not valid UTF-8
        is encoded as `row.decode("utf-8", "replace")` (errors="replace") or raises ArrowRowError
        naming the row (errors="strict"). A pandas Series gives a Series of lists."""
        from ..columns.pandas_io import ids_series, is_pandas_series
        from . import columns as C

        self._require_encode()
        C.check_errors(errors)
        if is_pandas_series(column):
            from ..columns.arrow import as_arrow

            result = self.encode_arrow(as_arrow(column), errors=errors, large_list=large_list)
            return ids_series(result, column, lambda a: a.tolist())
        return C.text_columns(column, lambda col, base: self._encode_chunk(col, base, errors, False),
                              lambda res, chunked: C.assemble_ids(res, chunked, large_list))

    def count_arrow(self, column, *, num_threads: int | None = None, errors: str = "replace"):
        """The number of ids of every row (int64, nulls stay null). A pandas Series gives an `Int64` Series."""
        from ..columns.pandas_io import counts_series, is_pandas_series
        from . import columns as C

        self._require_encode()
        C.check_errors(errors)
        if is_pandas_series(column):
            from ..columns.arrow import as_arrow

            return counts_series(self.count_arrow(as_arrow(column), errors=errors), column)
        return C.text_columns(column, lambda col, base: self._encode_chunk(col, base, errors, True),
                              C.assemble_counts)

    def decode_arrow(self, column, *, errors: str = "replace", num_threads: int | None = None):
        """`decode` of every row of a list<integer> column (list / large_list / fixed_size_list):
        large_string, nulls stay null. Invalid bytes render by the kind's own decode rule, so only
        errors="replace" is available; an id outside the vocabulary raises TokenIdError naming the row."""
        from . import columns as C

        C.check_errors(errors)
        if errors != "replace":
            raise ValueError(f"tokenizer kind {self.kind!r} renders invalid bytes by its own decode rule: "
                             "decode_arrow takes errors='replace' only")

        return C.decode_rows(column, self.vocab_size, self.decode)

    def _require_encode(self) -> None:
        if not self.supports_encode:
            raise EncodeNotSupportedError(f"tokenizer kind {self.kind!r} is decode-only: it has no encode_arrow")
