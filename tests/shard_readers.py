"""Readers of the training shard layouts, written from the published formats (not from tltok_jit.integrations.shards)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

# Megatron-LM's DType codes, written out independently of tltok_jit.integrations.shards
MEGATRON_CODES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64,
                  7: np.float32, 8: np.uint16}


def read_megatron(prefix: Path) -> tuple[np.dtype, list[np.ndarray]]:
    """The documents of PREFIX.bin / PREFIX.idx, decoded as Megatron's _IndexReader does."""
    raw = (prefix.parent / (prefix.name + ".idx")).read_bytes()
    assert raw[:9] == b"MMIDIDX\x00\x00"
    (version,) = struct.unpack_from("<Q", raw, 9)
    assert version == 1
    (code,) = struct.unpack_from("<B", raw, 17)
    n_seq, n_doc = struct.unpack_from("<QQ", raw, 18)
    off = 34
    lengths = np.frombuffer(raw, dtype="<i4", count=n_seq, offset=off)
    pointers = np.frombuffer(raw, dtype="<i8", count=n_seq, offset=off + 4 * n_seq)
    doc_idx = np.frombuffer(raw, dtype="<i8", count=n_doc, offset=off + 12 * n_seq)
    assert len(raw) == off + 12 * n_seq + 8 * n_doc, "trailing bytes in the index"
    dtype = np.dtype(MEGATRON_CODES[code]).newbyteorder("<")
    assert list(doc_idx) == list(range(n_seq + 1))
    data = np.fromfile(prefix.parent / (prefix.name + ".bin"), dtype=dtype)
    assert data.nbytes == int(lengths.sum()) * dtype.itemsize
    docs = []
    for ln, ptr in zip(lengths, pointers):
        assert ptr % dtype.itemsize == 0
        docs.append(data[ptr // dtype.itemsize: ptr // dtype.itemsize + ln])
    # sequences are contiguous and in order
    assert list(pointers) == list(np.concatenate([[0], np.cumsum(lengths[:-1]) * dtype.itemsize]))[:n_seq]
    return dtype, docs


def read_flat(prefix: Path) -> tuple[dict, np.ndarray]:
    meta = json.loads((prefix.parent / (prefix.name + ".json")).read_text())
    ids = np.memmap(prefix.parent / (prefix.name + ".bin"), dtype=np.dtype(meta["dtype"]).newbyteorder("<"), mode="r") \
        if meta["n_tokens"] else np.zeros(0, dtype=meta["dtype"])
    assert len(ids) == meta["n_tokens"]
    return meta, np.asarray(ids)
