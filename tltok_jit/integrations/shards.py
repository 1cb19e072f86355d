"""Training shard writers: Megatron-LM / NeMo indexed datasets and flat token files.

Two layouts, both little-endian and written batch by batch (memory stays flat):

* `MegatronWriter(prefix)`: `PREFIX.bin` (the ids of every document, concatenated) and
  `PREFIX.idx`, the index Megatron-LM's `IndexedDataset` reads: `b"MMIDIDX\\x00\\x00"`, `<Q` version 1,
  `<B` dtype code, `<Q` sequence count, `<Q` document count (= sequences + 1), int32 sequence
  lengths, int64 sequence byte offsets into `.bin`, int64 document indices `0, 1, ..., n` (one
  sequence per document, as `tools/preprocess_data.py` writes without `--split-sentences`). The
  dtype is Megatron's `DType.optimal_dtype(n_vocab)`: uint16 below 65,500 ids, else int32.
* `FlatBinWriter(prefix)`: `PREFIX.bin`, the ids of every document concatenated with no header
  (uint16 when every id of the vocabulary fits, i.e. n_vocab <= 65,536, else uint32), read with
  `np.memmap(path, dtype=meta["dtype"], mode="r")`, and `PREFIX.json` recording dtype, n_tokens,
  n_documents, encoding, n_vocab and the end-of-text convention.

Document rules (both layouts): with `eos_id`, the id is appended after the last id of every
written document (never before a document; no BOS). A document with no ids (empty text, or a
null row) is skipped: no tokens, no EOS, no index entry, as Megatron's preprocessing writes
nothing for it; `skipped_empty` counts them.

Files are written under `.NAME.tltok-tmp-PID` in the destination directory and renamed when
`finalize()` completes, the index / sidecar last: a killed run never leaves a complete-looking
shard. `abort()` (or an exception inside a `with` block) removes the temporary files.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

MEGATRON_HEADER = b"MMIDIDX\x00\x00"
MEGATRON_VERSION = 1
# Megatron-LM's DType enum (megatron/core/datasets/indexed_dataset.py)
MEGATRON_DTYPE_CODES = {
    np.dtype(np.uint8): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3, np.dtype(np.int32): 4,
    np.dtype(np.int64): 5, np.dtype(np.float64): 6, np.dtype(np.float32): 7, np.dtype(np.uint16): 8,
}
FLAT_FORMAT = "tltok-tokens-v1"
TMP_TAG = ".tltok-tmp-"  # the CLI's temporary-name convention: its stale-file cleanup knows it
_INT32_MAX = 2**31 - 1


def megatron_dtype(n_vocab: int) -> np.dtype:
    """Megatron-LM's `DType.optimal_dtype(vocab_size)`: uint16 below 65,500 ids, else int32."""
    return np.dtype(np.uint16 if n_vocab < 65500 else np.int32)


def flat_dtype(n_vocab: int) -> np.dtype:
    """uint16 when every id of the vocabulary fits (n_vocab <= 65,536), else uint32."""
    return np.dtype(np.uint16 if n_vocab <= 65536 else np.uint32)


def shard_prefix(path: str | os.PathLike) -> Path:
    """The shard prefix of `path`: `train.bin` and `train` both give `train`."""
    p = Path(path)
    return p.with_suffix("") if p.suffix in (".bin", ".idx") else p


def _temp_for(dest: Path) -> Path:
    return dest.parent / f".{dest.name}{TMP_TAG}{os.getpid()}"


def _flat_and_lengths(docs) -> tuple[np.ndarray, np.ndarray]:
    """(all ids concatenated, ids per document; -1 for a null row) of a batch of documents:
    an Arrow list array / chunked array (e.g. from `encode_arrow`) or a sequence of id sequences."""
    if hasattr(docs, "combine_chunks"):
        docs = docs.combine_chunks()
    if hasattr(docs, "value_lengths"):
        import pyarrow.compute as pc

        lengths = docs.value_lengths().fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        # flatten() honours offsets and skips the values under null slots
        flat = pc.list_flatten(docs).to_numpy(zero_copy_only=False)
        return np.asarray(flat, dtype=np.int64) if flat.dtype.kind not in "iu" else flat, lengths
    arrays = [np.asarray(d if d is not None else [], dtype=np.int64) for d in docs]
    lengths = np.array([len(a) if d is not None else -1 for a, d in zip(arrays, docs)], dtype=np.int64)
    flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    return flat, lengths


class _ShardWriter:
    """The `.bin` stream shared by both layouts: documents in, ids (and EOS) appended."""

    def __init__(self, prefix: str | os.PathLike, *, n_vocab: int, dtype: np.dtype,
                 eos_id: int | None = None, encoding: str | None = None):
        if eos_id is not None and not 0 <= int(eos_id) < n_vocab:
            raise ValueError(f"eos_id {eos_id} is outside the vocabulary of {n_vocab} ids")
        self.prefix = shard_prefix(prefix)
        self.n_vocab = int(n_vocab)
        self.dtype = np.dtype(dtype).newbyteorder("<")
        self.eos_id = None if eos_id is None else int(eos_id)
        self.encoding = encoding
        self.bin_path = self.prefix.with_name(self.prefix.name + ".bin")
        self.n_tokens = 0
        self.n_documents = 0
        self.skipped_empty = 0
        self._doc_lengths: list[np.ndarray] = []
        self._pairs: list[tuple[Path, Path]] = []
        self.bin_path.parent.mkdir(parents=True, exist_ok=True)
        self._bin = open(self._temp(self.bin_path), "wb")
        self._done = False

    def _temp(self, dest: Path) -> Path:
        tmp = _temp_for(dest)
        self._pairs.append((tmp, dest))
        return tmp

    def add(self, docs) -> None:
        """Append a batch of documents: an Arrow list array of ids (nulls and empty rows skipped)
        or a sequence of id sequences (None / empty skipped)."""
        if self._done:
            raise ValueError("the shard writer is already finalized")
        flat, lengths = _flat_and_lengths(docs)
        if len(flat) and (int(flat.min()) < 0 or int(flat.max()) >= self.n_vocab):
            bad = int(flat.min()) if int(flat.min()) < 0 else int(flat.max())
            raise ValueError(f"token id {bad} is outside the vocabulary of {self.n_vocab} ids")
        kept = lengths[lengths > 0]
        self.skipped_empty += int(len(lengths) - len(kept))
        if self.eos_id is not None and len(kept):
            out = np.empty(len(flat) + len(kept), dtype=self.dtype)
            eos_at = np.cumsum(kept + 1) - 1
            mask = np.ones(len(out), dtype=bool)
            mask[eos_at] = False
            out[mask] = flat
            out[eos_at] = self.eos_id
            kept = kept + 1
        else:
            out = flat.astype(self.dtype, copy=False)
        if len(kept) and int(kept.max()) > _INT32_MAX:
            raise ValueError(f"a document of {int(kept.max())} ids exceeds the int32 sequence length of the index")
        self._bin.write(out.tobytes())
        self.n_tokens += len(out)
        self.n_documents += len(kept)
        self._doc_lengths.append(kept.astype(np.int64))

    def add_texts(self, enc, texts: Sequence[str | None], **encode_kwargs) -> None:
        """Encode `texts` with `enc.encode_arrow` (keyword arguments passed on) and append them."""
        import pyarrow as pa

        self.add(enc.encode_arrow(pa.array(list(texts), type=pa.large_string()), **encode_kwargs))

    def _lengths(self) -> np.ndarray:
        return np.concatenate(self._doc_lengths) if self._doc_lengths else np.zeros(0, dtype=np.int64)

    def _write_index(self) -> None:
        raise NotImplementedError

    def finalize(self) -> None:
        """Close `.bin`, write the index / sidecar, rename everything into place (index last)."""
        if self._done:
            return
        self._bin.close()
        try:
            self._write_index()
            for tmp, dest in self._pairs:  # .bin first: the index names a complete shard
                os.replace(tmp, dest)
        except BaseException:
            self.abort()
            raise
        self._done = True
        self._pairs = []

    def abort(self) -> None:
        """Remove the temporary files; nothing appears under the destination names."""
        if not self._bin.closed:
            self._bin.close()
        for tmp, _dest in self._pairs:
            try:
                tmp.unlink()
            except OSError:
                pass
        self._pairs = []
        self._done = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.finalize() if exc_type is None else self.abort()


class MegatronWriter(_ShardWriter):
    """`PREFIX.bin` + `PREFIX.idx` of a Megatron-LM / NeMo indexed dataset, one sequence per document."""

    def __init__(self, prefix: str | os.PathLike, *, n_vocab: int, eos_id: int | None = None,
                 encoding: str | None = None, dtype: np.dtype | None = None):
        dt = megatron_dtype(n_vocab) if dtype is None else np.dtype(dtype)
        if dt not in MEGATRON_DTYPE_CODES or dt.kind not in "iu":
            raise ValueError(f"dtype {dt} has no Megatron integer code")
        if n_vocab - 1 > np.iinfo(dt).max:
            raise ValueError(f"dtype {dt} cannot hold the ids of a vocabulary of {n_vocab}")
        super().__init__(prefix, n_vocab=n_vocab, dtype=dt, eos_id=eos_id, encoding=encoding)
        self.idx_path = self.prefix.with_name(self.prefix.name + ".idx")

    def _write_index(self) -> None:
        lengths = self._lengths()
        pointers = np.zeros(len(lengths), dtype="<i8")
        if len(lengths) > 1:
            np.cumsum(lengths[:-1] * self.dtype.itemsize, out=pointers[1:])
        doc_index = np.arange(len(lengths) + 1, dtype="<i8")
        with open(self._temp(self.idx_path), "wb") as f:
            f.write(MEGATRON_HEADER)
            f.write(struct.pack("<Q", MEGATRON_VERSION))
            f.write(struct.pack("<B", MEGATRON_DTYPE_CODES[self.dtype.newbyteorder("=")]))
            f.write(struct.pack("<Q", len(lengths)))
            f.write(struct.pack("<Q", len(doc_index)))
            f.write(lengths.astype("<i4").tobytes())
            f.write(pointers.tobytes())
            f.write(doc_index.tobytes())


class FlatBinWriter(_ShardWriter):
    """`PREFIX.bin` (ids, no header) + `PREFIX.json` (dtype, counts, encoding, EOS convention)."""

    def __init__(self, prefix: str | os.PathLike, *, n_vocab: int, eos_id: int | None = None,
                 encoding: str | None = None, extra: dict | None = None):
        super().__init__(prefix, n_vocab=n_vocab, dtype=flat_dtype(n_vocab), eos_id=eos_id, encoding=encoding)
        self.json_path = self.prefix.with_name(self.prefix.name + ".json")
        self.extra = dict(extra or {})

    def metadata(self) -> dict:
        """The sidecar's content."""
        return {
            "format": FLAT_FORMAT,
            "dtype": self.dtype.newbyteorder("=").name,
            "byte_order": "little",
            "n_tokens": self.n_tokens,
            "n_documents": self.n_documents,
            "skipped_empty_documents": self.skipped_empty,
            "encoding": self.encoding,
            "n_vocab": self.n_vocab,
            "eos": self.eos_id is not None,
            "eos_id": self.eos_id,
            "eos_placement": "after each document" if self.eos_id is not None else None,
            "bin": self.bin_path.name,
            **self.extra,
        }

    def _write_index(self) -> None:
        with open(self._temp(self.json_path), "w", encoding="utf-8") as f:
            json.dump(self.metadata(), f, indent=2)
            f.write("\n")


def shard_paths(prefix: str | os.PathLike, fmt: str) -> list[Path]:
    """The files a writer of format `fmt` ("megatron" or "bin") creates for `prefix`."""
    p = shard_prefix(prefix)
    ext = {"megatron": (".bin", ".idx"), "bin": (".bin", ".json")}[fmt]
    return [p.with_name(p.name + e) for e in ext]


def write_documents(prefix: str | os.PathLike, batches: Iterable, *, fmt: str, n_vocab: int,
                    eos_id: int | None = None, encoding: str | None = None) -> _ShardWriter:
    """Write every batch of `batches` (see `add`) to a shard of format `fmt`; the finalized writer."""
    cls = {"megatron": MegatronWriter, "bin": FlatBinWriter}.get(fmt)
    if cls is None:
        raise ValueError(f"unknown shard format {fmt!r}; use megatron or bin")
    with cls(prefix, n_vocab=n_vocab, eos_id=eos_id, encoding=encoding) as w:
        for b in batches:
            w.add(b)
    return w
