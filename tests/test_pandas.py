"""pandas Series in, pandas out (`encode_arrow`: id lists, `count_arrow`: Int64 with <NA>), and the
Hugging Face `datasets` recipe (`with_format("arrow")`, `map(batched=True)`) with nulls; ids against
tiktoken."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

from conftest import REPO  # noqa: E402

NAME = "cl100k_base"
TEXTS = ["hello world", None, "naïve café 東京 🙂", "", "<|endoftext|> stays text", None, "x" * 3000]


@pytest.fixture(scope="module")
def pair(ours, tiktoken_oracle):
    return ours(NAME), tiktoken_oracle(NAME)


def _expected(oracle, texts):
    return [None if t is None else oracle.encode_ordinary(t) for t in texts]


def _series():
    index = pd.Index([10, 11, 12, 13, 14, 15, 16], name="doc")
    yield pd.Series(TEXTS, dtype=object, index=index, name="text")
    yield pd.Series(TEXTS, dtype=object, index=index, name="text").replace({None: np.nan})
    yield pd.Series(TEXTS, dtype="string[pyarrow]", index=index, name="text")
    yield pd.Series(TEXTS, dtype=pd.ArrowDtype(pa.string()), index=index, name="text")
    yield pd.Series(TEXTS, dtype=pd.ArrowDtype(pa.large_string()), index=index, name="text")
    yield pd.Series(TEXTS, index=index, name="text")  # pandas' default string dtype


@pytest.mark.parametrize("series", list(_series()), ids=lambda s: str(s.dtype))
def test_pandas_in_pandas_out(pair, series):
    enc, oracle = pair
    ids = enc.encode_arrow(series, disallowed_special=(), num_threads=2)
    assert isinstance(ids, pd.Series) and ids.dtype == object
    assert ids.index.equals(series.index) and ids.name == "text"
    assert ids.tolist() == _expected(oracle, TEXTS)
    assert all(type(v) is list and all(type(i) is int for i in v) for v in ids if v is not None)
    counts = enc.count_arrow(series, disallowed_special=())
    assert isinstance(counts, pd.Series) and str(counts.dtype) == "Int64"
    assert counts.index.equals(series.index) and counts.name == "text"
    assert counts.isna().tolist() == [t is None for t in TEXTS]
    assert counts.dropna().tolist() == [len(oracle.encode_ordinary(t)) for t in TEXTS if t is not None]


def test_pandas_edge_cases(pair):
    enc, oracle = pair
    empty = pd.Series([], dtype=object)
    assert enc.encode_arrow(empty).tolist() == [] and str(enc.count_arrow(empty).dtype) == "Int64"
    nulls = pd.Series([None, None], dtype=object)
    assert enc.encode_arrow(nulls).tolist() == [None, None]
    assert enc.count_arrow(nulls).isna().all()
    sliced = pd.Series(TEXTS[:5], dtype="string[pyarrow]").iloc[2:]
    assert enc.encode_arrow(sliced, disallowed_special=()).tolist() == _expected(oracle, TEXTS[2:5])
    assert list(enc.encode_arrow(sliced, disallowed_special=()).index) == [2, 3, 4]
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode_arrow(pd.Series(["<|endoftext|>"], dtype=object))
    # Arrow in stays Arrow out
    assert isinstance(enc.encode_arrow(pa.array(["a"])), pa.Array)


def test_pandas_tokenizer_json(shared_path):
    tokenizers = pytest.importorskip("tokenizers")
    import tltok_jit

    path = str(shared_path("tokenizers/qwen2.5/tokenizer.json"))  # runs its NFC normalizer in Python
    enc, oracle = tltok_jit.from_file(path), tokenizers.Tokenizer.from_file(path)
    texts = ["Ａｍｅｌｉｅ café", None, "12345 tokens"]
    got = enc.encode_arrow(pd.Series(texts, dtype=object), allowed_special="all")
    assert got.tolist() == [None if t is None else oracle.encode(t, add_special_tokens=False).ids for t in texts]
    assert enc.count_arrow(pd.Series(texts, dtype=object)).isna().tolist() == [False, True, False]


# ------------------------------------------------------------------------------------------ datasets


@pytest.fixture
def datasets_mod(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    return pytest.importorskip("datasets")


def test_datasets_recipe(pair, datasets_mod):
    enc, oracle = pair
    ds = datasets_mod.Dataset.from_dict({"text": TEXTS, "id": list(range(len(TEXTS)))})

    def tokenize(batch: pa.Table) -> pa.Table:  # the README recipe
        return batch.append_column("ids", enc.encode_arrow(batch["text"], disallowed_special=()))

    mapped = ds.with_format("arrow").map(tokenize, batched=True, batch_size=3)
    out = mapped.with_format(None)
    assert out.column_names == ["text", "id", "ids"]
    assert out["ids"] == _expected(oracle, TEXTS) and out["id"] == list(range(len(TEXTS)))
    again = ds.with_format("arrow").map(tokenize, batched=True, batch_size=3)
    assert again._fingerprint == mapped._fingerprint  # the function (and the encoding in it) hashed, not random

    # worker processes receive the encoding pickled by reference
    par = ds.with_format("arrow").map(tokenize, batched=True, batch_size=2, num_proc=2).with_format(None)
    assert par["ids"] == out["ids"]

    def count(batch: pa.Table) -> pa.Table:
        return pa.table({"n": enc.count_arrow(batch["text"], disallowed_special=())})

    n = ds.with_format("arrow").map(count, batched=True, remove_columns=ds.column_names).with_format(None)
    assert n["n"] == [None if t is None else len(oracle.encode_ordinary(t)) for t in TEXTS]
    # the pandas format goes through the pandas path
    p = ds.with_format("pandas").map(lambda b: {"n": enc.count_arrow(b["text"], disallowed_special=())},
                                     batched=True).with_format(None)
    assert p["n"] == n["n"]


def test_datasets_fingerprint_is_stable_across_processes(pair, datasets_mod):
    from datasets.fingerprint import Hasher

    enc, _ = pair
    code = ("import sys, tltok_jit; from datasets.fingerprint import Hasher; "
            f"print(Hasher.hash(tltok_jit.get_encoding({NAME!r})))")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == Hasher.hash(enc)
    assert pickle.dumps(enc) == pickle.dumps(enc)
