"""tokenizer.json column path (`encode_arrow` / `count_arrow` of models that run Python around the
kernels: Qwen2.5's NFC, SmolLM2's missing bytes, Mistral-7B's character level) on string columns
holding invalid UTF-8: each row is encoded as `row.decode("utf-8", "replace")` (README, arrow.py's
documented rule, what the kernel path of Llama-3 does), and every row error names the row of the
whole input across chunks.

Oracle: `tokenizers.Tokenizer.encode(row.decode("utf-8", "replace"), add_special_tokens=False)`.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pytest
from conftest import get_shared_path

import tltok_jit
from tltok_jit.columns.arrow import ArrowRowError

PYTHON_PIPELINE = ["qwen2.5", "smollm2", "mistral-7b"]
ROWS = [b"ok \xff tail", None, b"\xe4\xbd", b"caf\xc3\xa9 \xed\xa0\x80 x\xc3", b"plain words", b"",
        b"\xf0\x9f\x98 and \xe2\x82\xac 12345", b"\x80\x80\x80"]


@functools.lru_cache(maxsize=None)
def _pair(name: str):
    tokenizers = pytest.importorskip("tokenizers")
    path = str(get_shared_path(f"tokenizers/{name}/tokenizer.json"))
    return tltok_jit.from_file(path), tokenizers.Tokenizer.from_file(path)


def pair(name: str):
    get_shared_path(f"tokenizers/{name}/tokenizer.json")  # skips with the path, also when cached
    return _pair(name)


def string_array(rows: list[bytes | None], typ=pa.string()) -> pa.Array:
    """A string array holding `rows` as they are, valid UTF-8 or not (built from buffers)."""
    data = b"".join(r or b"" for r in rows)
    offsets = np.zeros(len(rows) + 1, dtype=np.int64 if typ == pa.large_string() else np.int32)
    np.cumsum([len(r or b"") for r in rows], out=offsets[1:])
    valid = np.packbits(np.array([r is not None for r in rows]), bitorder="little")
    return pa.Array.from_buffers(typ, len(rows), [pa.py_buffer(valid.tobytes()), pa.py_buffer(offsets.tobytes()),
                                                  pa.py_buffer(data)], null_count=rows.count(None))


def expected_ids(hf, rows):
    return [None if r is None else hf.encode(r.decode("utf-8", "replace"), add_special_tokens=False).ids
            for r in rows]


@pytest.mark.parametrize("name", PYTHON_PIPELINE + ["llama3"])
def test_invalid_utf8_rows_are_replaced(name):
    enc, hf = pair(name)
    want = expected_ids(hf, ROWS)
    counts = [None if w is None else len(w) for w in want]
    columns = {
        "string": string_array(ROWS),
        "large_string": string_array(ROWS, pa.large_string()),
        "binary cast unsafely": pa.array(ROWS, pa.binary()).view(pa.string()),
        "string_view": pa.array(ROWS, pa.binary_view()).view(pa.string_view()),
        "dictionary": pa.DictionaryArray.from_arrays(pa.array([3, None, 0, 6, 3]), string_array(ROWS[:7])),
    }
    with pytest.raises(UnicodeDecodeError):
        columns["string"].to_pylist()  # the column really holds invalid UTF-8
    for what, col in columns.items():
        if what == "dictionary":
            rows = [ROWS[3], None, ROWS[0], ROWS[6], ROWS[3]]
            w, c = expected_ids(hf, rows), [None if r is None else len(x) for r, x in zip(rows, expected_ids(hf, rows))]
        else:
            w, c = want, counts
        assert enc.encode_arrow(col).to_pylist() == w, (name, what)
        assert enc.count_arrow(col).to_pylist() == c, (name, what)
        for r, ids in zip(range(len(col)), w):
            if ids is not None and what != "dictionary":
                assert enc.encode(ROWS[r].decode("utf-8", "replace")) == ids


@pytest.mark.parametrize("name", PYTHON_PIPELINE + ["llama3"])
def test_row_errors_name_the_global_row(name):
    enc, _ = pair(name)
    good = [b"first chunk", None, b"x"]
    chunked = pa.chunked_array([string_array(good), string_array([b"a", b"b"]),
                                string_array([b"fine", b"bad \xff here", b"z"])])
    with pytest.raises(ArrowRowError, match=r"^row 6: invalid UTF-8 at byte 4") as e:
        enc.encode_arrow(chunked, errors="strict")
    assert e.value.row == 6
    with pytest.raises(ArrowRowError, match=r"^row 6: ") as e:
        enc.count_arrow(chunked, errors="strict")
    # a disallowed special token in the third chunk
    special = min(enc.special_tokens_set).encode()
    chunked = pa.chunked_array([string_array(good), string_array([b"a", b"b"]),
                                string_array([b"fine", b"z", b"has " + special])])
    with pytest.raises(ArrowRowError, match=r"^row 7: ") as e:
        enc.encode_arrow(chunked)
    assert e.value.row == 7
    replaced = enc.encode_arrow(pa.chunked_array([string_array(good), string_array([b"\xff", b"b\xc3"])]))
    assert replaced.num_chunks == 2
    assert replaced.to_pylist()[3:] == [enc.encode("\ufffd"), enc.encode("b\ufffd")]
