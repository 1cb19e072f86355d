"""Ray Data: `tokenize_dataset` / `TokenizeBatch` on a real local cluster give `encode_arrow`'s ids row for row."""

from __future__ import annotations

import pickle

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'ray[data]', the `ray` extra)")
pytest.importorskip("ray.data", reason="ray.data is not installed (pip install 'ray[data]', the `ray` extra)")

from tltok_jit import ray as tray  # noqa: E402

TEXTS = ["first document", None, "", "ünïcödé 日本語 🎉 and numbers 12345", "<|endoftext|> as text",
         None, "  spaces\n\nnewlines\n", "last row"]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds")
    for i in range(3):  # several files, several row groups, nulls in each
        texts = [None if t is None else f"{t} #{i}.{k}" for k in range(5) for t in TEXTS]
        pq.write_table(pa.table({"text": pa.array(texts, pa.string()), "row": list(range(len(texts))),
                                 "file": [i] * len(texts)}), d / f"part-{i}.parquet", row_group_size=16)
    return d


def _expected(enc, dataset_dir, count_only=False):
    """(file, row) -> ids / count from the single-process path."""
    out = {}
    for p in sorted(dataset_dir.glob("*.parquet")):
        t = pq.read_table(p)
        col = t.column("text")
        res = enc.count_arrow(col, num_threads=1, disallowed_special=()) if count_only else \
            enc.encode_arrow(col, num_threads=1, disallowed_special=())
        for f, r, v in zip(t.column("file").to_pylist(), t.column("row").to_pylist(), res.to_pylist()):
            out[(f, r)] = v
    return out


def _rows(ds):
    return {(r["file"], r["row"]): r for r in ds.take_all()}


@pytest.mark.parametrize("how", ["name", "pickled"])
def test_tokenize_dataset_equals_encode_arrow(cluster, dataset_dir, ours, how):
    enc = ours("o200k_base")
    encoding = "o200k_base" if how == "name" else pickle.loads(pickle.dumps(enc))
    ds = ray.data.read_parquet(str(dataset_dir))
    # one actor: on a 2-CPU cluster a pool as large as the CPUs leaves Ray Data no slot to schedule with
    out = tray.tokenize_dataset(ds, encoding=encoding, concurrency=1).materialize()
    assert out.schema().base_schema.field("tokens").type == pa.list_(pa.uint32())
    rows = _rows(out)
    exp = _expected(enc, dataset_dir)
    assert len(rows) == len(exp) == 3 * 5 * len(TEXTS)
    assert {k: r["tokens"] for k, r in rows.items()} == exp
    assert sum(r["tokens"] is None for r in rows.values()) == 3 * 5 * 2  # nulls kept as nulls
    assert all(r["text"] is None or r["text"].endswith(f"#{k[0]}.{k[1] // len(TEXTS)}")
               for k, r in rows.items())  # other columns pass through with their rows


def test_count_only_and_callable_class(cluster, dataset_dir, ours):
    enc = ours("r50k_base")
    ds = ray.data.read_parquet(str(dataset_dir)).map_batches(
        tray.TokenizeBatch, fn_constructor_kwargs=dict(encoding="r50k_base", count_only=True,
                                                       output_column="n"),
        batch_format="pyarrow", batch_size=7, compute=ray.data.ActorPoolStrategy(size=1)).materialize()
    rows = _rows(ds)
    assert ds.schema().base_schema.field("n").type == pa.int64()
    assert {k: r["n"] for k, r in rows.items()} == _expected(enc, dataset_dir, count_only=True)


def test_batch_errors_name_the_column(ours):
    tb = tray.TokenizeBatch(encoding=ours("r50k_base"), column="body")
    with pytest.raises(KeyError, match="column 'body' not in the batch; columns: text"):
        tb(pa.table({"text": ["a"]}))
    with pytest.raises(ValueError, match="output column 'tokens' already exists"):
        tray.TokenizeBatch(encoding=ours("r50k_base"))(pa.table({"text": ["a"], "tokens": [1]}))
    with pytest.raises(TypeError, match="batch_format='pyarrow'"):
        tb({"text": ["a"]})
    with pytest.raises(TypeError, match="encoding must be"):
        tray.resolve_encoding(42)
    with pytest.raises(FileNotFoundError, match="nope.json"):
        tray.resolve_encoding("nope.json")


@pytest.mark.parametrize("rel", ["tokenizers/gpt2/tokenizer.json", "tokenizers/tiktoken/r50k_base.tiktoken"])
def test_batch_from_tokenizer_file(shared_path, rel):
    import tltok_jit

    path = shared_path(rel)
    ref = tltok_jit.from_file(path) if path.suffix == ".json" else \
        tltok_jit.Encoding.from_tiktoken_file(path, name=path.stem)
    texts = pa.array(TEXTS, pa.string())
    out = tray.TokenizeBatch(encoding=str(path))(pa.table({"text": texts, "k": list(range(len(TEXTS)))}))
    assert out.column_names == ["text", "k", "tokens"]
    assert out.column("tokens").to_pylist() == ref.encode_arrow(texts, disallowed_special=()).to_pylist()
    assert out.column("tokens").to_pylist()[1] is None and out.column("tokens").to_pylist()[0]
