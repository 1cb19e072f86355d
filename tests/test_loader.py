"""tltok_jit.loader.TokenBatches: exact resume, disjoint and complete shares per rank and DataLoader
worker, fixed shapes, named errors, on real text written to Parquet."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tltok_jit.loader import ResumeError, TokenBatches, torch_dataset
from tltok_jit.packing import PackingError

SEQ = 256
EOS = 199999


@pytest.fixture(scope="module")
def corpus(shared_path, ours, tmp_path_factory):
    """Three Parquet files of real text (~1.5 KB pieces of War and Peace, whole UDHR translations, a
    few nulls) in row groups of 40 rows; returns (folder, enc, texts in global row order)."""
    enc = ours("o200k_base")
    text = shared_path("corpora/english-war-and-peace.txt").read_text(encoding="utf-8")
    docs, cur, n = [], [], 0
    for line in text.splitlines(keepends=True)[:6000]:
        cur.append(line)
        n += len(line.encode())
        if n >= 1500:
            docs.append("".join(cur))
            cur, n = [], 0
    udhr = sorted(shared_path("corpora/english-war-and-peace.txt").parent.glob("udhr/*.txt"))[:30]
    docs += [p.read_text(encoding="utf-8")[:6000] for p in udhr]
    docs = [None if i % 37 == 5 else d for i, d in enumerate(docs)]
    folder = tmp_path_factory.mktemp("loader")
    thirds = [docs[: len(docs) // 3], docs[len(docs) // 3: 2 * len(docs) // 3], docs[2 * len(docs) // 3:]]
    for i, part in enumerate(thirds):
        pq.write_table(pa.table({"text": pa.array(part, pa.string()), "id": list(range(len(part)))}),
                       folder / f"part-{i}.parquet", row_group_size=40)
    return folder, enc, [d for part in thirds for d in part]


def make(corpus, **kw):
    folder, enc, _ = corpus
    args = dict(seq_len=SEQ, batch_size=4, shuffle_buffer=64, block_rows=16, eos_id=EOS, num_threads=1)
    args.update(kw)
    return TokenBatches(str(folder / "*.parquet"), enc, **args)


def same(a: list[dict], b: list[dict]) -> bool:
    return len(a) == len(b) and all(x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)
                                    for x, y in zip(a, b))


@pytest.fixture(scope="module")
def full_run(corpus):
    return list(make(corpus, epochs=2))


def test_fixed_shapes_and_boundaries(full_run):
    for b in full_run:
        assert b["input_ids"].shape == b["labels"].shape == b["position_ids"].shape == (4, SEQ)
        assert b["input_ids"].dtype == np.int64 and b["seq_lens"].dtype == b["cu_seqlens"].dtype == np.int32
        assert (b["seq_lens"].sum(axis=1) == SEQ).all()
        assert b["cu_seqlens"][-1] == 4 * SEQ
        # every run starts at position 0 with no loss on its first id
        starts = b["cu_seqlens"][:-1]
        assert (b["position_ids"].reshape(-1)[starts] == 0).all()
        assert (b["labels"].reshape(-1)[starts] == -100).all()


@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_resume_equals_an_uninterrupted_run(corpus, full_run, data):
    k = data.draw(st.integers(0, len(full_run)))
    loader = make(corpus, epochs=2)
    it = iter(loader)
    head = [next(it) for _ in range(k)]
    state = json.loads(json.dumps(loader.state_dict()))  # a plain, JSON-able dict
    del it
    resumed = make(corpus, epochs=2)
    resumed.load_state_dict(state)
    assert same(head + list(resumed), full_run)


def test_iterating_twice_continues_then_starts_over(corpus, full_run):
    loader = make(corpus, epochs=2)
    it = iter(loader)
    head = [next(it) for _ in range(3)]
    it.close()
    assert same(head + list(loader), full_run)
    assert same(list(loader), full_run)


def test_the_loader_pickles_with_its_position(corpus, full_run):
    loader = make(corpus, epochs=2)
    it = iter(loader)
    head = [next(it) for _ in range(5)]
    copy = pickle.loads(pickle.dumps(loader))
    assert same(head + list(copy), full_run)


def _rows_seen(batches) -> dict[int, list]:
    seen: dict[int, list] = {}
    for b in batches:
        for row, start, n in b["doc_index"].tolist():
            seen.setdefault(row, []).append((start, n))
    return seen


def _check_cover(corpus, seen_by_share):
    _, enc, texts = corpus
    want = {i for i, t in enumerate(texts) if t is not None}
    rows = [set(s) for s in seen_by_share]
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            assert not rows[i] & rows[j], "two shares read one row"
    assert set().union(*rows) == want
    for seen in seen_by_share:
        for row, parts in seen.items():
            parts.sort()
            assert [s for s, _ in parts] == list(np.cumsum([0] + [n for _, n in parts[:-1]]))
            assert sum(n for _, n in parts) == len(enc.encode(texts[row])) + 1  # every id once, and the eos


@pytest.mark.parametrize("world_size", [1, 3])
def test_ranks_read_disjoint_shares_covering_the_data(corpus, world_size):
    shares = [_rows_seen(make(corpus, rank=r, world_size=world_size, return_doc_index=True))
              for r in range(world_size)]
    _check_cover(corpus, shares)


def test_every_epoch_covers_the_data_in_another_order(corpus):
    loader = make(corpus, epochs=2, return_doc_index=True, batch_size=1)
    batches = list(loader)
    # rows flow across epochs; split where the second epoch's first window starts
    total = loader.stats["rows"] // 2
    first, second = batches[:total], batches[total:]
    _check_cover(corpus, [_rows_seen(first)])
    _check_cover(corpus, [_rows_seen(second)])
    assert not same(first, second)


def test_ids_are_the_tokenizer_ids(corpus):
    _, enc, texts = corpus
    loader = make(corpus, shuffle=False, strategy="pad", return_doc_index=True, batch_size=1,
                  long_documents="drop")
    for b in loader:
        if not len(b["doc_index"]):
            continue
        row, start, n = b["doc_index"][0].tolist()
        assert b["input_ids"][0, :n].tolist() == (enc.encode(texts[row]) + [EOS])[start:start + n]


def test_counts_and_last_batch(corpus):
    _, _, texts = corpus
    loader = make(corpus, batch_size=5)
    batches = list(loader)
    st_ = loader.stats
    assert st_["null_rows"] == sum(t is None for t in texts)
    assert st_["documents"] == sum(t is not None for t in texts)
    assert len(batches) * 5 == st_["rows"] + st_["padding_rows"] and st_["padding_rows"] < 5
    if st_["padding_rows"]:
        last = batches[-1]
        assert (last["labels"][5 - st_["padding_rows"]:] == -100).all()
    dropped = list(make(corpus, batch_size=5, drop_last=True))
    assert len(dropped) == st_["rows"] // 5


def test_a_state_from_other_options_or_files_is_refused(corpus, tmp_path):
    loader = make(corpus)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    for kw, arg in (({"seed": 1}, "seed"), ({"seq_len": 128}, "seq_len"), ({"strategy": "concat"}, "strategy"),
                    ({"rank": 1, "world_size": 2}, "rank")):
        with pytest.raises(ResumeError) as e:
            make(corpus, **kw).load_state_dict(state)
        assert e.value.argument == arg and arg in str(e.value)
    folder, enc, _ = corpus
    pq.write_table(pa.table({"text": ["one more"]}), tmp_path / "part-9.parquet")
    other = TokenBatches([str(folder / "*.parquet"), str(tmp_path / "part-9.parquet")], enc, seq_len=SEQ,
                         batch_size=4, shuffle_buffer=64, block_rows=16, eos_id=EOS, num_threads=1)
    with pytest.raises(ResumeError, match="files") as e:
        other.load_state_dict(state)
    assert e.value.argument == "source"
    with pytest.raises(ResumeError, match="state"):
        make(corpus).load_state_dict({"epoch": 0})


@pytest.mark.parametrize("kw, arg", [
    ({"seq_len": 1}, "seq_len"), ({"batch_size": 0}, "batch_size"), ({"rank": 2, "world_size": 2}, "rank"),
    ({"eos_id": 10**7}, "eos_id"), ({"eos_id": -1}, "eos_id"), ({"strategy": "greedy"}, "strategy"),
    ({"column": "body"}, "column"), ({"shuffle_buffer": 0}, "shuffle_buffer"),
])
def test_bad_options_are_named(corpus, kw, arg):
    with pytest.raises(PackingError) as e:
        make(corpus, **kw)
    assert e.value.argument == arg


def test_missing_source_is_named(corpus, tmp_path):
    _, enc, _ = corpus
    with pytest.raises(PackingError, match="matches no Parquet") as e:
        TokenBatches(str(tmp_path / "none-*.parquet"), enc, seq_len=8, batch_size=1)
    assert e.value.argument == "source"


def test_import_loads_no_torch():
    code = ("import sys, tltok_jit, tltok_jit.loader, tltok_jit.packing; "
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_torch_dataloader_workers_read_disjoint_shares(corpus):
    torch = pytest.importorskip("torch")
    loader = make(corpus, return_doc_index=True)
    dl = torch.utils.data.DataLoader(torch_dataset(loader), batch_size=None, num_workers=2)
    batches = [{k: v.numpy() if torch.is_tensor(v) else v for k, v in b.items()} for b in dl]
    assert all(b["input_ids"].shape == (4, SEQ) for b in batches)
    assert batches[0]["input_ids"].dtype == np.int64
    _check_cover(corpus, [_rows_seen(batches)])
    # two workers give the same rows as rank 0 and 1 of two without workers
    ranks = [_rows_seen(make(corpus, rank=r, world_size=2, return_doc_index=True)) for r in range(2)]
    assert set(_rows_seen(batches)) == set(ranks[0]) | set(ranks[1])


def test_text_spelling_a_special_token_is_text(corpus, tmp_path):
    _, enc, _ = corpus
    pq.write_table(pa.table({"text": ["a <|endoftext|> b", "plain"]}), tmp_path / "s.parquet")
    loader = TokenBatches(str(tmp_path / "s.parquet"), enc, seq_len=32, batch_size=1, shuffle=False,
                          return_doc_index=True)
    (b,) = list(loader)
    n = len(enc.encode_ordinary("a <|endoftext|> b"))
    assert b["input_ids"][0, :n].tolist() == enc.encode_ordinary("a <|endoftext|> b")
    (b,) = list(TokenBatches(str(tmp_path / "s.parquet"), enc, seq_len=32, batch_size=1, shuffle=False,
                             allowed_special="all"))
    want = enc.encode("a <|endoftext|> b", allowed_special="all")
    assert EOS in want and b["input_ids"][0, :len(want)].tolist() == want


def test_in_memory_sources_read_like_the_files(corpus):
    folder, enc, texts = corpus
    table = pa.concat_tables([pq.read_table(p) for p in sorted(folder.glob("*.parquet"))])
    want = list(make(corpus, shuffle=False, return_doc_index=True))
    args = dict(seq_len=SEQ, batch_size=4, shuffle_buffer=64, block_rows=16, eos_id=EOS, num_threads=1,
                shuffle=False, return_doc_index=True)
    assert same(list(TokenBatches(table, enc, **args)), want)
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset(table)
    assert same(list(TokenBatches(ds, enc, **args)), want)
    # a selection of a Dataset is read as selected
    picked = ds.select(range(len(ds) - 1, -1, -1))
    got = _rows_seen(TokenBatches(picked, enc, **args))
    assert sorted(got) == sorted(i for i, t in enumerate(texts[::-1]) if t is not None)


@pytest.mark.parametrize("piece_rows", [16, 10**9])
def test_batches_are_the_rows_of_the_window_packed_whole(corpus, monkeypatch, piece_rows):
    """A window read and tokenized in pieces, its rows written batch by batch, equals `pack` over
    the window's documents at once."""
    import tltok_jit.loader as loader_module
    from tltok_jit.packing import pack

    monkeypatch.setattr(loader_module, "_PIECE_ROWS", piece_rows)
    _, enc, texts = corpus
    got = list(make(corpus, shuffle=False, shuffle_buffer=10**6, batch_size=3, drop_last=True,
                    return_doc_index=True))
    kept = [i for i, t in enumerate(texts) if t is not None]
    want = pack([enc.encode_ordinary(texts[i]) for i in kept], SEQ, eos_id=EOS)
    assert len(got) == len(want) // 3
    for k, b in enumerate(got):
        for key in ("input_ids", "labels", "position_ids"):
            assert np.array_equal(b[key], getattr(want, key)[3 * k:3 * k + 3]), (k, key)
        seg = want.row_segments
        rows = want.doc_index[seg[3 * k]:seg[3 * k + 3]].copy()
        rows[:, 0] = np.asarray(kept)[rows[:, 0]]
        assert np.array_equal(b["doc_index"], rows)


def test_a_held_batch_is_never_overwritten_and_a_dropped_one_is_reused(corpus):
    from tltok_jit.engine import arenas

    held, copies, seen = [], [], set()
    for i, b in enumerate(make(corpus, seq_len=2048, batch_size=2)):  # 100 KB batches: recycled
        seen.add(b["input_ids"].ctypes.data)
        if i % 3 == 0:
            held.append(b)
            copies.append({k: np.array(v) for k, v in b.items()})
    assert same(held, copies)
    if arenas.RECYCLE:
        assert len(seen) < (len(held) - 1) * 3  # the dropped batches' memory came back


def test_the_loader_runs_only_the_kernels_warm_compiles(corpus):
    from tltok_jit.kernels import packing as k

    k.warm()
    before = {f: len(getattr(k, f).signatures) for f in ("bfd", "concat", "pad", "fill_rows")}
    for dtype in ("int64", "int32"):
        for strategy in ("bfd", "concat", "pad"):
            list(make(corpus, dtype=dtype, strategy=strategy, batch_size=5))
    assert {f: len(getattr(k, f).signatures) for f in before} == before
