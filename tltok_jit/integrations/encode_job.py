"""The read -> encode -> write pipeline behind `tltok encode`.

Three stages overlap: a reader thread pulls record batches from the input files, the calling thread
encodes them (the kernels release the GIL), a writer thread hands the results to a sink (Parquet
files, a packed shard, a Megatron / flat shard). Between the stages two bounded queues hold at most
`depth` batches each, so memory stays at a few batches whatever the input size. Batches keep their
input order and their boundaries come from the reader alone: what is written never depends on the
thread count.

A failure in any stage stops the other two and is raised in the calling thread: exceptions of the
`passthrough` types as they are, others as a `JobError` naming the stage, the file and the first
row of the batch. KeyboardInterrupt (Ctrl-C, or SIGTERM turned into one by the CLI) in the calling
thread stops both threads before it propagates, so the caller can then remove its temporary output.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import TltokError
from .parquet_write import writer_options

_POLL = 0.05  # seconds: how often a blocked stage checks whether the job was stopped


class JobError(TltokError):
    """One line naming the file (and row) where the job failed."""


class Part:
    """One record batch on its way through the pipeline."""

    __slots__ = ("batch", "file", "n_bytes", "n_tokens", "path", "result", "row")

    def __init__(self, file: int, path: str, row: int, batch: Any):
        self.file = file          # index of the input file
        self.path = path          # its path, for messages
        self.row = row            # the batch's first row within that file
        self.batch = batch        # the record batch read (only the needed columns)
        self.result = None        # set by the encode step
        self.n_tokens = 0
        self.n_bytes = 0


class FileEnd:
    """Marker after the last batch of an input file (also sent for a file with no batches)."""

    __slots__ = ("file", "parts", "path")

    def __init__(self, file: int, path: str, parts: int):
        self.file = file
        self.path = path
        self.parts = parts


class _Stopped(Exception):
    """Another stage failed or the job was interrupted: leave quietly."""


class _Done:
    pass


_DONE = _Done()


def _first_line(e: BaseException) -> str:
    text = str(e)
    return text.splitlines()[0] if text else ""


class _Failure:
    def __init__(self):
        self.lock = threading.Lock()
        self.error: BaseException | None = None
        self.stop = threading.Event()

    def set(self, error: BaseException) -> None:
        with self.lock:
            if self.error is None:
                self.error = error
        self.stop.set()


def _put(q: queue.Queue, item, stop: threading.Event) -> None:
    while True:
        if stop.is_set():
            raise _Stopped
        try:
            q.put(item, timeout=_POLL)
            return
        except queue.Full:
            continue


def _get(q: queue.Queue, stop: threading.Event):
    while True:
        if stop.is_set():
            raise _Stopped
        try:
            return q.get(timeout=_POLL)
        except queue.Empty:
            continue


def run(inputs: Sequence[tuple[str, Callable[[], Iterable]]], encode: Callable[[Part], None],
        write: Callable[[Part | FileEnd], None], *, depth: int = 2,
        passthrough: tuple[type[BaseException], ...] = ()) -> None:
    """Read, encode and write every batch of `inputs`, the three stages overlapping.

    inputs: (path, function returning that file's record batches), in output order.
    encode: called in this thread with each Part; sets `part.result` (and n_tokens, n_bytes).
    write: called in the writer thread with each encoded Part and a FileEnd after each file.
    depth: batches each queue holds (memory: about 2 * depth + 3 batches in flight).
    passthrough: exception types re-raised unchanged (already one line naming the file).
    """
    fail = _Failure()
    read_q: queue.Queue = queue.Queue(maxsize=max(1, depth))
    write_q: queue.Queue = queue.Queue(maxsize=max(1, depth))
    where = {"read": "", "write": ""}  # what each thread is busy with, for its error message

    def wrap(stage: str, e: BaseException) -> BaseException:
        if isinstance(e, passthrough) or isinstance(e, JobError):
            return e
        verb = "reading" if stage == "read" else "writing the output of"
        return JobError(f"{verb} {where[stage]}: {type(e).__name__}: {_first_line(e)}")

    def reader() -> None:
        try:
            for index, (path, batches) in enumerate(inputs):
                row = 0
                parts = 0
                where["read"] = str(path)
                it = iter(batches())
                try:
                    for batch in it:
                        _put(read_q, Part(index, str(path), row, batch), fail.stop)
                        row += batch.num_rows
                        parts += 1
                        where["read"] = f"{path} (after row {row})"
                finally:
                    close = getattr(it, "close", None)
                    if close is not None:
                        close()
                _put(read_q, FileEnd(index, str(path), parts), fail.stop)
            _put(read_q, _DONE, fail.stop)
        except _Stopped:
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
            fail.set(wrap("read", e))

    def writer() -> None:
        try:
            while True:
                item = _get(write_q, fail.stop)
                if item is _DONE:
                    return
                if isinstance(item, Part):
                    where["write"] = f"{item.path} (rows from {item.row})"
                else:
                    where["write"] = item.path
                write(item)
        except _Stopped:
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
            fail.set(wrap("write", e))

    threads = [threading.Thread(target=reader, name="tltok-read", daemon=True),
               threading.Thread(target=writer, name="tltok-write", daemon=True)]
    for t in threads:
        t.start()
    try:
        while True:
            item = _get(read_q, fail.stop)
            if isinstance(item, Part):
                encode(item)
            _put(write_q, item, fail.stop)
            if item is _DONE:
                break
        threads[1].join()  # the writer drains the queue, then stops at _DONE
    except _Stopped:
        pass
    except BaseException as e:
        fail.set(e)
    finally:
        fail.stop.set()
        for t in threads:
            t.join()
    if fail.error is not None:
        raise fail.error


# ------------------------------------------------------------------------------------------------
# the steps of `tltok encode`
# ------------------------------------------------------------------------------------------------

def text_bytes(col) -> int:
    """Bytes of text in a string/binary column (including the bytes null rows may point at)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    t = col.type
    n = len(col)
    if n and (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
              or pa.types.is_large_binary(t)):
        dt = np.int64 if (pa.types.is_large_string(t) or pa.types.is_large_binary(t)) else np.int32
        off = np.frombuffer(col.buffers()[1], dtype=dt)
        return int(off[col.offset + n]) - int(off[col.offset])
    if n == 0:
        return 0
    try:
        return int(pc.sum(pc.binary_length(col)).as_py() or 0)
    except Exception:  # noqa: BLE001
        return col.nbytes


class PadTo(NamedTuple):
    """`tltok encode --pad-to`: every row `width` ids (cut, then padded with `pad_id`), and a mask."""

    width: int
    pad_id: int
    padding_side: str = "right"


def padded_columns(res, pad: PadTo, truncation_side: str, threads: int, n_vocab: int) -> list:
    """A `list<uint32>` column -> [ids, attention_mask], each `fixed_size_list<int32>[width]`; a null
    row stays null in both."""
    import numpy as np
    import pyarrow as pa

    from ..padding import pad_rows

    offsets = np.frombuffer(res.buffers()[1], dtype=np.int32 if pa.types.is_list(res.type) else np.int64,
                            count=len(res) + 1, offset=res.offset * (4 if pa.types.is_list(res.type) else 8))
    values = np.frombuffer(res.buffers()[3], dtype=np.uint32)
    batch = pad_rows(values, offsets, n_vocab=n_vocab,
                     max_length=pad.width, padding="max_length", padding_side=pad.padding_side, pad_id=pad.pad_id,
                     truncation=True, truncation_side=truncation_side, dtype="int32", num_threads=threads or None)
    nulls = res.is_null() if res.null_count else None
    return [pa.FixedSizeListArray.from_arrays(pa.array(a.reshape(-1)), pad.width, mask=nulls)
            for a in (batch.input_ids, batch.attention_mask)]


def encode_step(enc, column: str, *, threads: int, special: dict, count_only: bool = False,
                large_list: bool = False, hint: str = "", max_length: int | None = None,
                truncation_side: str = "right", pad: PadTo | None = None) -> Callable[[Part], None]:
    """The encode stage: ids (or counts) of `column` of each batch, each row cut to `max_length` ids
    (its first, or with truncation_side="left" its last) and with `pad` padded to a fixed width; a
    row the encoder refuses is a JobError naming the file and the row within it."""
    import pyarrow.compute as pc

    from ..columns import arrow

    def step(part: Part) -> None:
        batch = part.batch
        col = batch.column(batch.schema.get_field_index(column))
        if not arrow.is_text_type(col.type):
            raise JobError(f"column {column!r} of {part.path} has type {col.type}, not a string column")
        try:
            if count_only:
                res = enc.count_arrow(col, num_threads=threads, **special)
                if max_length is not None:
                    res = pc.min_element_wise(res, max_length, skip_nulls=False)
                part.n_tokens = int(pc.sum(res).as_py() or 0)
            elif pad is not None:
                ids = enc.encode_arrow(col, num_threads=threads, **special)
                part.n_tokens = int(pc.sum(pc.min_element_wise(pc.list_value_length(ids), pad.width)).as_py() or 0)
                res = padded_columns(ids, pad, truncation_side, threads, enc.n_vocab)
            else:
                res = enc.encode_arrow(col, num_threads=threads, large_list=large_list, max_length=max_length,
                                       truncation_side=truncation_side, **special)
                part.n_tokens = int(res.offsets[-1].as_py() - res.offsets[0].as_py()) if len(res) else 0
        except (arrow.ArrowRowError, ValueError) as e:
            msg = _first_line(e)
            row = getattr(e, "row", None)
            if row is not None and msg.startswith(f"row {row}:"):
                msg = f"row {part.row + row} of the file:" + msg[len(f"row {row}:"):]
            raise JobError(f"{part.path}: {msg}{hint}") from None
        part.result = res
        part.n_bytes = text_bytes(col)

    return step


class ParquetSink:
    """Encoded batches -> one Parquet file per input file (the ids column after the kept ones; the
    writer settings of `parquet_write`)."""

    def __init__(self, dests: Sequence[Path], keep: Sequence[list[str]], empty_fields: Sequence[list],
                 output_column: str, count_only: bool, progress: Callable[[int, int, int], None],
                 pad_width: int | None = None, compression: str = "zstd", ids_encoding: str = "plain"):
        import pyarrow as pa

        self.dests = list(dests)
        self.keep = list(keep)
        self.empty_fields = list(empty_fields)  # the kept columns' fields, for a file with no batches
        if pad_width is not None:  # encode_step's padded_columns: ids and their mask
            fixed = pa.list_(pa.int32(), pad_width)
            self.out_fields = [pa.field(output_column, fixed), pa.field("attention_mask", fixed)]
        else:
            self.out_fields = [pa.field(output_column, pa.int64() if count_only else pa.list_(pa.uint32()))]
        self.progress = progress
        self.compression = compression
        self.ids_encoding = ids_encoding
        self._writer = None

    def _open(self, file: int, fields: list) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        dest = self.dests[file]
        dest.parent.mkdir(parents=True, exist_ok=True)
        schema = pa.schema(list(fields) + self.out_fields)
        options = writer_options(schema, {f.name for f in self.out_fields}, self.compression, self.ids_encoding)
        self._writer = pq.ParquetWriter(str(dest), schema, **options)

    def __call__(self, item: Part | FileEnd) -> None:
        import pyarrow as pa

        if isinstance(item, FileEnd):
            if self._writer is None:  # no batches: still a valid (empty) file
                self._open(item.file, self.empty_fields[item.file])
            self._close()
            return
        keep = self.keep[item.file]
        batch = item.batch
        result = item.result if isinstance(item.result, list) else [item.result]
        cols = [batch.column(batch.schema.get_field_index(c)) for c in keep] + result
        out = pa.RecordBatch.from_arrays(cols, names=keep + [f.name for f in self.out_fields])
        if self._writer is None:
            self._open(item.file, [out.schema.field(c) for c in keep])
        self._writer.write_batch(out)
        self.progress(item.batch.num_rows, item.n_bytes, item.n_tokens)

    def _close(self) -> None:
        w, self._writer = self._writer, None
        if w is not None:
            w.close()

    def abort(self) -> None:
        """Close an open file after a failure (the caller removes it)."""
        try:
            self._close()
        except Exception:  # noqa: BLE001 - the file is being discarded
            pass


class PackSink:
    """Encoded batches -> consecutive sequences of `seq_len` ids in an open binary file; the last
    incomplete sequence stays in `carry`."""

    def __init__(self, f, seq_len: int, dtype, eot: int | None, progress: Callable[[int, int, int], None]):
        import numpy as np

        self.f = f
        self.seq = int(seq_len)
        self.dtype = np.dtype(dtype)
        self.eot = eot
        self.progress = progress
        self.carry = np.zeros(0, dtype=self.dtype)
        self.n_seqs = 0
        self.docs = 0

    def __call__(self, item: Part | FileEnd) -> None:
        import numpy as np

        if isinstance(item, FileEnd):
            return
        res = item.result
        if hasattr(res, "combine_chunks"):
            res = res.combine_chunks()
        flat = res.flatten().to_numpy(zero_copy_only=False)
        dtype = self.dtype
        if self.eot is not None:
            valid = res.is_valid().to_numpy(zero_copy_only=False)
            lens = res.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)[valid]
            stream = np.empty(len(flat) + len(lens), dtype=dtype)
            eot_pos = np.cumsum(lens + 1) - 1
            mask = np.ones(len(stream), dtype=bool)
            mask[eot_pos] = False
            stream[mask] = flat
            stream[eot_pos] = self.eot
            self.docs += int(valid.sum())
        else:
            stream = flat.astype(dtype, copy=False)
            self.docs += len(res) - res.null_count
        if len(self.carry):
            stream = np.concatenate([self.carry, stream])
        k = len(stream) // self.seq
        if k:
            self.f.write(stream[: k * self.seq].astype("<" + dtype.str[1:], copy=False).tobytes())
            self.n_seqs += k
        self.carry = stream[k * self.seq:].copy()
        self.progress(len(res), item.n_bytes, len(flat))


class PackedParquetSink:
    """Encoded batches -> packed rows of `seq_len` ids in one Parquet file (`tltok_jit.packing`): the
    documents of each record batch packed together with `strategy`, a row group each; null and
    empty texts are skipped and counted."""

    def __init__(self, path: Path, seq_len: int, options: dict, progress: Callable[[int, int, int], None],
                 compression: str = "zstd"):
        self.path = path
        self.compression = compression
        self.seq_len = seq_len
        self.options = options
        self.progress = progress
        self._writer = None
        self.rows = self.documents = self.skipped = self.split = self.dropped = self.tokens = 0

    def __call__(self, item: Part | FileEnd) -> None:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        from ..packing import pack_column

        if isinstance(item, FileEnd):
            return
        res = item.result
        docs = res.filter(pc.greater(pc.list_value_length(res), 0))  # drops null rows too
        self.skipped += len(res) - len(docs)
        if len(docs):
            table, batch = pack_column(docs, self.seq_len, **self.options)
            if self._writer is None:
                self._writer = pq.ParquetWriter(str(self.path), table.schema, compression=self.compression)
            self._writer.write_table(table)
            self.rows += len(batch)
            self.documents += batch.documents
            self.split += batch.split
            self.dropped += batch.dropped
            self.tokens += batch.tokens
        self.progress(len(res), item.n_bytes, item.n_tokens)

    def close(self) -> None:
        """Finish the file (a valid empty one when no document came)."""
        import pyarrow.parquet as pq

        from ..packing import pack_column

        if self._writer is None:
            import pyarrow as pa

            empty, _ = pack_column(pa.array([[0]], pa.list_(pa.uint32())), self.seq_len, strategy="pad")
            self._writer = pq.ParquetWriter(str(self.path), empty.schema, compression=self.compression)
        w, self._writer = self._writer, None
        w.close()


class ShardSink:
    """Encoded batches -> a `shards` writer (Megatron or flat .bin)."""

    def __init__(self, writer, progress: Callable[[int, int, int], None]):
        self.writer = writer
        self.progress = progress

    def __call__(self, item: Part | FileEnd) -> None:
        if isinstance(item, FileEnd):
            return
        n_before = self.writer.n_tokens
        self.writer.add(item.result)
        self.progress(len(item.result), item.n_bytes, self.writer.n_tokens - n_before)
