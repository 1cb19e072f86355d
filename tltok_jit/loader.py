"""Training batches from Parquet text: read, tokenize, pack, batch, and resume exactly.

`TokenBatches(source, tokenizer, seq_len=..., batch_size=...)` reads the `column` of Parquet files
(paths, folders, globs; or an in-memory pyarrow Table or HF `datasets.Dataset`, cut into row groups
of 65,536 rows and copied to each DataLoader worker), tokenizes it with `tokenizer.encode_arrow`, packs the documents with
`tltok_jit.packing` and yields dicts of numpy arrays: input_ids, labels, position_ids [batch_size,
seq_len] (the packing's dtype), seq_lens [batch_size, K] int32 (segments then padding, 0 after; K is
the widest row of the batch), cu_seqlens [M + 1] int32 and max_seqlen (FlashAttention's varlen
layout over input_ids.reshape(-1)).

How the data is cut, so that the batches are a pure function of the options and the files:

* Every row group of every file (sorted by path) is cut into blocks of `block_rows` rows. Each epoch
  the row groups are put in an order (shuffled with (seed, epoch), or as read) and the blocks,
  in that order, are cut into `world_size * num_workers` contiguous shares: rank r, DataLoader
  worker w reads share r * num_workers + w. The shares are disjoint and cover every row once per
  epoch; a rank may get one batch more or fewer than another.
* A share is read in windows of `shuffle_buffer` rows: a window's documents are tokenized (on
  `num_threads` threads; a window of 8,192 rows or more in pieces, the next piece read from Parquet
  while one is tokenized; the next window is prepared on a background thread while this one is
  handed out), shuffled, packed together, and the packed rows shuffled (each with a generator
  seeded by (seed, epoch, share, window)). Rows flow into batches across windows and epochs; the
  last batch of the last epoch is filled up with padding rows (labels all -100) unless
  `drop_last`.
* `state_dict()` is the position of the next batch: (epoch, window, rows of it already handed
  out). `load_state_dict` rebuilds that window and skips those rows, so the batches after a resume
  equal those of an uninterrupted run; a state from other options or files is refused, naming what
  differs.

Text is encoded as `encode_ordinary` would (a row that spells "<|endoftext|>" gets the ids of that
text) unless `allowed_special` names special tokens to match. Null texts are skipped and counted
(`stats`: counts of this object's iterations in this process, not part of the state); memory holds two windows of
text and ids with where each of their rows' segments goes, and one row group of the column. A
batch's rows are written when it is handed out, into memory reused once no array of an earlier
batch refers to it (a batch kept by the caller is never overwritten).

A training loop (torch; `torch_dataset` wraps the batches as tensors):

    loader = TokenBatches("data/*.parquet", tltok_jit.get_encoding("o200k_base"), seq_len=2048,
                          batch_size=8, eos_id=199999, rank=rank, world_size=world)
    for step, batch in enumerate(loader):
        out = model(input_ids=torch.from_numpy(batch["input_ids"]),
                    position_ids=torch.from_numpy(batch["position_ids"]),
                    labels=torch.from_numpy(batch["labels"]))
        out.loss.backward(); opt.step(); opt.zero_grad()
        if step % 1000 == 0:
            torch.save({"model": model.state_dict(), "data": loader.state_dict()}, "ckpt.pt")
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .engine.arenas import Arenas
from .errors import PackingError, ResumeError
from .packing import (DTYPES, LONG_DOCUMENTS, STRATEGIES, Layout, check_choice, check_token, fill,
                      layout_documents, rows_memory)

__all__ = ["ResumeError", "TokenBatches", "torch_dataset"]

STATE_VERSION = 1
_MAGIC = ("tltok_jit.loader", STATE_VERSION)


_TABLE_GROUP = 1 << 16  # rows of an in-memory table taken as one row group
# A window is read and tokenized in up to _PIECES pieces of at least _PIECE_ROWS rows: the next
# piece is decoded from Parquet while one is tokenized. Each encode_arrow call has a fixed cost
# (~3 ms on a loaded 2-core VM): a 2,089-row window in 4 pieces took 66 ms against 57 in one.
_PIECES = 4
_PIECE_ROWS = 4096
# batches' memory, recycled (see packing.rows_memory); a training loop may hold a few batches
# (prefetch, pinning)
_ARENAS = Arenas(keep=4, most=1 << 26)


def _as_table(source):
    """A pyarrow Table of an in-memory source (a pyarrow Table, or a Hugging Face `datasets.Dataset`,
    its selection and order applied), or None for paths."""
    module = type(source).__module__.partition(".")[0]
    if module == "pyarrow" and hasattr(source, "column_names"):
        return source
    if module == "datasets" and hasattr(source, "with_format"):
        ds = source.flatten_indices() if getattr(source, "_indices", None) is not None else source
        return ds.with_format("arrow")[:]
    return None


def _expand(source) -> list[str]:
    """The Parquet files of `source` (a path, folder, glob, or a list of them), each once, sorted."""
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not items:
        raise PackingError("source names no files", "source")
    files = []
    for item in items:
        item = os.fspath(item)
        if any(c in item for c in "*?["):
            found = sorted(glob.glob(item, recursive=True))
        elif os.path.isdir(item):
            found = sorted(os.path.join(item, n) for n in os.listdir(item) if n.endswith(".parquet"))
        else:
            found = [item] if os.path.isfile(item) else []
        if not found:
            raise PackingError(f"source {item!r} matches no Parquet file", "source")
        files += found
    return sorted(set(os.path.abspath(f) for f in files))


def _int_arg(value, arg: str, least: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or int(value) < least:
        raise PackingError(f"{arg} must be an int of at least {least}, not {value!r}", arg)
    return int(value)


class TokenBatches:
    """Fixed-shape training batches of packed documents from Parquet text (see this module's
    docstring), resumable with `state_dict()` / `load_state_dict()`.

    >>> import pyarrow as pa, pyarrow.parquet as pq, tempfile, os, tltok_jit
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pq.write_table(pa.table({"text": ["hello world", "goodbye"]}), path)
    >>> loader = TokenBatches(path, tltok_jit.get_encoding("o200k_base"), seq_len=4, batch_size=2,
    ...                       eos_id=199999, shuffle=False)
    >>> [b["input_ids"].tolist() for b in loader]
    [[[24912, 2375, 199999, 0], [30744, 43571, 199999, 0]]]
    """

    def __init__(self, source, tokenizer, *, seq_len: int, batch_size: int, rank: int = 0, world_size: int = 1,
                 shuffle_buffer: int = 8192, seed: int = 0, strategy: str = "bfd", column: str = "text",
                 num_threads: int | None = None, eos_id: int | None = None, bos_id: int | None = None,
                 pad_id: int = 0, long_documents: str = "split", shuffle: bool = True, epochs: int | None = 1,
                 drop_last: bool = False, block_rows: int = 1024, dtype: str = "int64",
                 return_doc_index: bool = False, allowed_special=frozenset()):
        self.seq_len = _int_arg(seq_len, "seq_len", 2)
        self.batch_size = _int_arg(batch_size, "batch_size", 1)
        self.world_size = _int_arg(world_size, "world_size", 1)
        self.rank = _int_arg(rank, "rank", 0)
        if self.rank >= self.world_size:
            raise PackingError(f"rank must be below world_size={self.world_size}, not {rank}", "rank")
        self.shuffle_buffer = _int_arg(shuffle_buffer, "shuffle_buffer", 1)
        self.seed = _int_arg(seed, "seed", 0)
        self.strategy = check_choice(strategy, "strategy", STRATEGIES)
        self.long_documents = check_choice(long_documents, "long_documents", LONG_DOCUMENTS)
        self.epochs = None if epochs is None else _int_arg(epochs, "epochs", 1)
        self.block_rows = _int_arg(block_rows, "block_rows", 1)
        self.num_threads = 0 if num_threads is None else _int_arg(num_threads, "num_threads", 0)
        if not isinstance(column, str):
            raise PackingError(f"column must be a column name, not {column!r}", "column")
        self.column = column
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise PackingError(f"dtype must be 'int64' or 'int32', not {dtype!r}", "dtype")
        self.dtype = dtype
        self.shuffle, self.drop_last, self.return_doc_index = bool(shuffle), bool(drop_last), bool(return_doc_index)
        n_vocab = getattr(tokenizer, "n_vocab", None)
        top = int(np.iinfo(DTYPES[dtype]).max)
        self.eos_id = None if eos_id is None else check_token(eos_id, "eos_id", top, n_vocab)
        self.bos_id = None if bos_id is None else check_token(bos_id, "bos_id", top, n_vocab)
        self.pad_id = check_token(pad_id, "pad_id", top, n_vocab)
        if not callable(getattr(tokenizer, "encode_arrow", None)):
            raise PackingError("tokenizer must have encode_arrow (a tltok_jit Encoding)", "tokenizer")
        self.tokenizer = tokenizer
        # text that spells a special token is text (as encode_ordinary): training data is not trusted
        # to hold control tokens, and one such row must not stop a run
        self.allowed_special = allowed_special if allowed_special == "all" else frozenset(allowed_special)
        self._table = _as_table(source)
        self.files = [] if self._table is not None else _expand(source)
        self._row_groups = self._read_layout()
        self._position = (0, 0, 0)  # (epoch, window, rows of the window handed out)
        self._shares = None  # (share, shares) of the running iteration
        self._resume_share = None  # (share, shares) of a loaded state, checked when iteration starts
        self.stats = {"documents": 0, "null_rows": 0, "split": 0, "dropped": 0, "tokens": 0, "rows": 0,
                      "padding_rows": 0}

    # ------------------------------------------------------------------ layout
    def _read_layout(self) -> list[tuple[int, int, int, int]]:
        """(file, row group, rows, first global row) of every row group, in file order."""
        import pyarrow.parquet as pq

        out, base = [], 0
        if self._table is not None:
            if self.column not in self._table.column_names:
                raise PackingError(f"the table has no column {self.column!r} (it has {self._table.column_names})",
                                   "column")
            n = self._table.num_rows
            out = [(0, g, min(_TABLE_GROUP, n - g * _TABLE_GROUP), g * _TABLE_GROUP)
                   for g in range(-(-n // _TABLE_GROUP))]
            self.total_rows = n
            return out
        for f, path in enumerate(self.files):
            meta = pq.ParquetFile(path)
            if self.column not in meta.schema_arrow.names:
                raise PackingError(f"{path} has no column {self.column!r} (it has {meta.schema_arrow.names})", "column")
            md = meta.metadata
            for g in range(md.num_row_groups):
                n = md.row_group(g).num_rows
                out.append((f, g, n, base))
                base += n
        self.total_rows = base
        return out

    def _identity(self) -> dict:
        """What a state must match: the options that shape the batches, and the files."""
        import hashlib

        files = hashlib.sha256()
        if self._table is not None:  # an in-memory table: its length and schema (its bytes would cost a pass)
            files.update(f"table\0{self.total_rows}\0{self._table.schema}".encode())
        else:
            # paths relative to the files' common folder: a moved copy of the data resumes
            root = os.path.commonpath([os.path.dirname(f) for f in self.files])
            for f, g, n, _ in self._row_groups:
                files.update(f"{os.path.relpath(self.files[f], root)}\0{g}\0{n}\0".encode())
        enc = self.tokenizer
        return {"seq_len": self.seq_len, "batch_size": self.batch_size, "rank": self.rank,
                "world_size": self.world_size, "shuffle_buffer": self.shuffle_buffer, "seed": self.seed,
                "strategy": self.strategy, "column": self.column, "eos_id": self.eos_id, "bos_id": self.bos_id,
                "pad_id": self.pad_id, "long_documents": self.long_documents, "shuffle": self.shuffle,
                "epochs": self.epochs, "drop_last": self.drop_last, "block_rows": self.block_rows,
                "dtype": self.dtype, "allowed_special": sorted(self.allowed_special) if self.allowed_special != "all"
                else "all", "tokenizer": f"{getattr(enc, 'name', type(enc).__name__)}/{getattr(enc, 'n_vocab', '')}",
                "source": files.hexdigest()}

    def _share_blocks(self, epoch: int, share: int, shares: int) -> list[tuple[int, int, int, int, int]]:
        """(file, row group, lo, hi, first global row) of the blocks share `share` reads in `epoch`."""
        order = np.arange(len(self._row_groups))
        if self.shuffle:
            order = np.random.default_rng([self.seed, epoch]).permutation(order)
        blocks = []
        for i in order:
            f, g, n, base = self._row_groups[i]
            blocks += [(f, g, lo, min(lo + self.block_rows, n), base + lo) for lo in range(0, n, self.block_rows)]
        a, z = len(blocks) * share // shares, len(blocks) * (share + 1) // shares
        return blocks[a:z]

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """Where the next batch starts (with what it belongs to); a plain dict of ints and strings."""
        epoch, window, rows = self._position
        share, shares = self._shares or self._default_share()
        return {"format": list(_MAGIC), "epoch": epoch, "window": window, "rows": rows, "share": share,
                "shares": shares, "identity": self._identity()}

    def load_state_dict(self, state: dict) -> None:
        """Continue from `state` (from `state_dict()` of a loader with the same options and files)."""
        if not isinstance(state, dict) or list(state.get("format", ())) != list(_MAGIC):
            raise ResumeError(f"not a {_MAGIC[0]} state of version {STATE_VERSION}", "state")
        mine = self._identity()
        for k, v in state["identity"].items():
            if mine.get(k) != v:
                what = "the files (names, row groups or row counts)" if k == "source" else f"{k}"
                raise ResumeError(f"the state is from another {what}: {v!r} in the state, {mine.get(k)!r} here", k)
        self._position = (int(state["epoch"]), int(state["window"]), int(state["rows"]))
        self._resume_share = (int(state["share"]), int(state["shares"]))

    def _default_share(self) -> tuple[int, int]:
        worker, workers = _worker()
        return self.rank * workers + worker, self.world_size * workers

    # ------------------------------------------------------------------ windows
    def _window(self, reader: _Reader, epoch: int, window: int, share: int, shares: int):
        """The layout of one window's rows (a `_Rows`, rows shuffled), or None past the share's
        end."""
        blocks = self._share_blocks(epoch, share, shares)
        sizes = np.array([b[3] - b[2] for b in blocks], dtype=np.int64)
        cum = np.concatenate([[0], np.cumsum(sizes)])
        a = window * self.shuffle_buffer
        if a >= cum[-1]:
            return None
        z = min(a + self.shuffle_buffer, int(cum[-1]))
        ids, rows = self._tokenize(reader, blocks, cum, a, z)
        values, starts, counts, valid = _lists(ids)
        rows = rows[valid]
        nulls = len(valid) - int(valid.sum()) if valid.dtype == np.bool_ else 0
        rng = None
        if self.shuffle:
            rng = np.random.default_rng([self.seed, epoch, share, shares, window])
            perm = rng.permutation(len(starts))
            starts, counts, rows = starts[perm], counts[perm], rows[perm]
        lay = layout_documents(values, starts, counts, self.seq_len, strategy=self.strategy,
                               eos=-1 if self.eos_id is None else self.eos_id,
                               bos=-1 if self.bos_id is None else self.bos_id,
                               split=self.long_documents == "split", source_rows=rows, rng=rng)
        seq_lens, _, _, tokens = lay.boundaries()
        return _Rows(lay, seq_lens, tokens, nulls)

    def _tokenize(self, reader: _Reader, blocks, cum: np.ndarray, a: int, z: int):
        """(list of encode_arrow id columns, global row ids) of share rows [a, z): read in pieces,
        the next piece read on a thread while this one is tokenized (Parquet decoding and
        encode_arrow release the GIL)."""
        n_pieces = max(1, min(_PIECES, (z - a) // _PIECE_ROWS))
        cuts = [a + (z - a) * i // n_pieces for i in range(n_pieces + 1)]
        encode = self.tokenizer.encode_arrow
        ids, rows = [], []
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tltok-reader") as io:
            ahead = io.submit(reader.read, blocks, cum, cuts[0], cuts[1])
            for i in range(n_pieces):
                texts, piece_rows = ahead.result()
                if i + 1 < n_pieces:
                    ahead = io.submit(reader.read, blocks, cum, cuts[i + 1], cuts[i + 2])
                ids.append(encode(texts, num_threads=self.num_threads, allowed_special=self.allowed_special,
                                  disallowed_special=()))
                rows.append(piece_rows)
        return ids, np.concatenate(rows)

    def __iter__(self) -> Iterator[dict]:
        share, shares = self._default_share()
        resume = self._resume_share
        if resume is not None and resume != (share, shares):
            raise ResumeError(f"the state is from share {resume[0]} of {resume[1]} (rank x DataLoader worker), this "
                              f"iteration reads share {share} of {shares}", "shares")
        self._resume_share = None
        self._shares = (share, shares)
        return self._batches(share, shares)

    def _windows(self, share: int, shares: int):
        """(epoch, window, packed) from the current position on, the next one prepared on a thread."""
        epoch, window, _ = self._position
        if self.epochs is not None and epoch >= self.epochs:
            return
        reader = _Reader(self.files, self.column, self._table)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tltok-loader") as pool:
            def at(e, w):
                return pool.submit(self._window, reader, e, w, share, shares)

            pending = at(epoch, window)
            while True:
                packed = pending.result()
                if packed is None:
                    if self.epochs is not None and epoch + 1 >= self.epochs:
                        return
                    if window == 0 and not self._share_blocks(epoch, share, shares):
                        # this share has no rows (more shares than blocks): nothing in any epoch
                        return
                    epoch, window = epoch + 1, 0
                    pending = at(epoch, window)
                    continue
                pending = at(epoch, window + 1)
                yield epoch, window, packed
                window += 1

    def _batches(self, share: int, shares: int) -> Iterator[dict]:
        b = self.batch_size
        parts = []  # (packed, row indices) making up the next batch
        have = 0
        skip = self._position[2]
        for epoch, window, packed in self._windows(share, shares):
            lo, n = skip, len(packed.layout)
            if not skip:
                self._count(packed)
            skip = 0
            while lo < n:
                hi = min(n, lo + b - have)
                parts.append((packed, lo, hi))
                have += hi - lo
                lo = hi
                if have == b:
                    self._position = (epoch, window, lo) if lo < n else (epoch, window + 1, 0)
                    yield self._assemble(parts)
                    parts, have = [], 0
        if parts and not self.drop_last:
            self.stats["padding_rows"] += b - have
            parts.append((None, 0, b - have))
            self._position = (self.epochs, 0, 0)  # the end: a state taken now resumes to no batch
            yield self._assemble(parts)
        self._position = (0, 0, 0)  # the next iteration starts over
        self._shares = None

    def _count(self, packed: _Rows) -> None:
        st, lay = self.stats, packed.layout
        st["documents"] += len(lay.counts)
        st["null_rows"] += packed.nulls
        st["split"] += lay.split
        st["dropped"] += lay.dropped
        st["tokens"] += packed.tokens
        st["rows"] += len(lay)

    def _assemble(self, parts) -> dict:
        """One batch dict from (packed, lo, hi) parts (rows lo:hi of a window's `_Rows`; packed
        None: hi - lo padding rows), its rows written now into recycled memory."""
        s = self.seq_len
        ids, pos, labels, mask = rows_memory(self.batch_size, s, np.dtype(self.dtype).type, _ARENAS)
        lens, docs = [], []
        r = 0
        for packed, lo, hi in parts:
            n = hi - lo
            if packed is None:
                ids[r:r + n] = self.pad_id
                labels[r:r + n] = -100
                pos[r:r + n] = np.arange(s)
                lens.append(np.full((n, 1), s, dtype=np.int32))
            else:
                fill(packed.layout, lo, hi, (ids[r:r + n], pos[r:r + n], labels[r:r + n], mask[r:r + n]),
                     self.pad_id, 1)
                lens.append(packed.seq_lens[lo:hi])
                if self.return_doc_index:
                    docs.append(packed.layout.doc_index(lo, hi))
            r += n
        if len(lens) == 1:
            seq_lens = lens[0]
        else:
            width = max(x.shape[1] for x in lens)
            seq_lens = np.zeros((self.batch_size, width), dtype=np.int32)
            r = 0
            for x in lens:
                seq_lens[r:r + len(x), :x.shape[1]] = x
                r += len(x)
        runs = seq_lens[seq_lens > 0]
        cu = np.zeros(len(runs) + 1, dtype=np.int32)
        np.cumsum(runs, out=cu[1:])
        out = {"input_ids": ids, "labels": labels, "position_ids": pos, "seq_lens": seq_lens,
               "cu_seqlens": cu, "max_seqlen": np.int32(runs.max())}
        if self.return_doc_index:
            out["doc_index"] = (docs[0] if len(docs) == 1 else np.concatenate(docs)) if docs else np.empty((0, 3),
                                                                                                        np.int64)
        return out


class _Rows:
    """One window's rows: their layout, seq_lens [N, K] int32, non-pad ids and null texts."""

    __slots__ = ("layout", "seq_lens", "tokens", "nulls")

    def __init__(self, layout: Layout, seq_lens: np.ndarray, tokens: int, nulls: int):
        self.layout, self.seq_lens, self.tokens, self.nulls = layout, seq_lens, tokens, nulls


class _Reader:
    """Reads rows of the text column, keeping the last row group read (blocks of one row group
    come one after another)."""

    def __init__(self, files: list[str], column: str, table=None):
        self.files, self.column, self.source = files, column, table
        self._key = None
        self._table = None
        self._handles: dict = {}  # file -> ParquetFile (its footer parsed once)

    def _row_group(self, f: int, g: int):
        import pyarrow.parquet as pq

        if self.source is not None:
            return self.source.column(self.column).slice(g * _TABLE_GROUP, _TABLE_GROUP)
        if self._key != (f, g):
            if f not in self._handles:
                self._handles[f] = pq.ParquetFile(self.files[f])
            self._table = self._handles[f].read_row_group(g, columns=[self.column])
            self._key = (f, g)
        return self._table.column(0)

    def read(self, blocks, cum: np.ndarray, a: int, z: int):
        """(text array, global row ids) of share rows [a, z): one array, as encode_arrow hands a
        chunked column to its threads chunk by chunk (many small chunks cost up to 2x)."""
        import pyarrow as pa

        chunks, rows = [], []
        i = int(np.searchsorted(cum, a, side="right") - 1)
        while a < z:
            f, g, lo, hi, base = blocks[i]
            off = a - int(cum[i])
            n = min(hi - lo - off, z - a)
            chunks += self._row_group(f, g).slice(lo + off, n).chunks
            rows.append(np.arange(base + off, base + off + n, dtype=np.int64))
            a += n
            i += 1
        if not chunks:
            return pa.array([], pa.string()), np.empty(0, np.int64)
        text = chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)
        return text, np.concatenate(rows)


def _lists(pieces):
    """(values, starts, counts, valid) of list columns from encode_arrow (a list of them, one after
    another), null rows left out (valid: the rows kept)."""
    import pyarrow as pa

    chunks = [c for ids in pieces for c in (ids.chunks if isinstance(ids, pa.ChunkedArray) else [ids])]
    values, starts, counts, valid = [], [], [], []
    shift = 0
    for c in chunks:
        off = np.asarray(c.offsets).astype(np.int64)
        ok = c.is_valid().to_numpy(zero_copy_only=False) if c.null_count else np.ones(len(c), dtype=np.bool_)
        values.append(c.values.to_numpy())
        starts.append((off[:-1] + shift)[ok])
        counts.append(np.diff(off)[ok])
        valid.append(ok)
        shift += len(c.values)
    if not chunks:
        e = np.empty(0, np.int64)
        return np.empty(0, np.uint32), e, e, np.empty(0, np.bool_)
    cat = np.concatenate
    return (values[0] if len(values) == 1 else cat(values)).astype(np.uint32, copy=False), cat(starts), \
        cat(counts), cat(valid)


def _worker() -> tuple[int, int]:
    """(id, count) of the torch DataLoader worker running this (0, 1 outside one); torch is never
    imported here, only asked when the program has imported it."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0, 1
    info = torch.utils.data.get_worker_info()
    return (info.id, info.num_workers) if info is not None else (0, 1)


def torch_dataset(loader: TokenBatches):
    """`loader` as a torch `IterableDataset` of dicts of tensors (the batches already batched:
    use `DataLoader(ds, batch_size=None, num_workers=...)`); each DataLoader worker reads its own
    share. `state_dict` / `load_state_dict` are the loader's (torchdata's StatefulDataLoader calls
    them in each worker).

    >>> ds = torch_dataset(loader)  # doctest: +SKIP
    """
    import torch

    class _Batches(torch.utils.data.IterableDataset):
        def __init__(self, batches: TokenBatches):
            super().__init__()
            self.batches = batches

        def __iter__(self):
            for b in self.batches:
                yield {k: torch.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else int(v)
                       for k, v in b.items()}

        def state_dict(self) -> dict:
            return self.batches.state_dict()

        def load_state_dict(self, state: dict) -> None:
            self.batches.load_state_dict(state)

    return _Batches(loader)
