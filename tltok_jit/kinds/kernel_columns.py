"""Arrow columns for the registry kinds whose rows run in their own kernels (WordPiece, Unigram):
`encode_arrow` / `count_arrow` / `decode_arrow` over the kind's `_column_chunk(col, row_base, threads,
errors, counting)` and `_decode_checked(ids)`."""

from __future__ import annotations

__all__ = ["KernelColumns", "threads_of"]


def threads_of(num_threads: int | None) -> int:
    """Worker threads for `num_threads` (None or <= 0: every numba thread)."""
    import numba

    limit = numba.config.NUMBA_NUM_THREADS
    if num_threads is None or num_threads <= 0:
        return limit
    return min(int(num_threads), limit)


class KernelColumns:
    """Mixed in before `Tokenizer`: its Arrow column methods, rows in parallel on the kind's kernels."""

    def encode_arrow(self, column, *, num_threads: int | None = None, errors: str = "replace",
                     large_list: bool | None = None):
        """`encode` of every row of a text column: list<uint32> (large_list<uint32> past 2**31 - 1 ids or
        with large_list=True), nulls stay null, chunks kept; rows in parallel, the same ids for any
        thread count. A row that is not valid UTF-8 is encoded as `row.decode("utf-8", "replace")`
        (errors="replace") or raises ArrowRowError naming the row (errors="strict")."""
        from . import columns as C

        C.check_errors(errors)
        threads = threads_of(num_threads)
        return C.text_columns(column, lambda col, base: self._column_chunk(col, base, threads, errors, False),
                              lambda res, chunked: C.assemble_ids(res, chunked, large_list))

    def count_arrow(self, column, *, num_threads: int | None = None, errors: str = "replace"):
        """The number of ids of every row (int64, nulls stay null), as `encode_arrow` counts them."""
        from . import columns as C

        C.check_errors(errors)
        threads = threads_of(num_threads)
        return C.text_columns(column, lambda col, base: self._column_chunk(col, base, threads, errors, True),
                              C.assemble_counts)

    def decode_arrow(self, column, *, errors: str = "replace", num_threads: int | None = None):
        """`decode` of every row of a list<integer> column: large_string, nulls stay null."""
        from . import columns as C

        C.check_errors(errors)

        return C.decode_rows(column, self.vocab_size, self._decode_checked)
