"""The Python encoder that answers while the kernels compile (tltok_jit.compile.python_encoder), against tiktoken,
and the Encoding's routing to it (tltok_jit.compile.background states)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_cases import edge_case_strings
from tltok_jit.compile import python_encoder as interim, background as warm
from tltok_jit.compile.python_encoder import InterimEncoder, _merge_heap, _merge_rescan

ENCODINGS = ["r50k_base", "cl100k_base", "o200k_base"]


def _description(name, shared_path):
    from conftest import TIKTOKEN_FILES

    shared_path(TIKTOKEN_FILES[name])
    from tltok_jit.loaders.known_encodings import load_description

    return load_description(name)


@pytest.fixture(scope="module", params=ENCODINGS)
def pair(request, shared_path, tiktoken_oracle):
    name = request.param
    return InterimEncoder(_description(name, shared_path)), tiktoken_oracle(name)


def test_edge_cases_equal_tiktoken(pair):
    ours, oracle = pair
    for s in edge_case_strings():
        s = s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        assert ours.encode_ordinary(s) == oracle.encode_ordinary(s), repr(s)


def corpus_texts() -> list[str]:
    """The 106 UDHR translations and the emoji test file from ../shared, else the committed UDHR
    openings (fixtures/sample.parquet)."""
    from conftest import FIXTURES, SHARED

    if (SHARED / "corpora" / "udhr").is_dir():
        texts = [p.read_text() for p in sorted((SHARED / "corpora" / "udhr").glob("*.txt"))]
        return texts + [(SHARED / "corpora" / "emoji-test.txt").read_text()[:200_000]]
    import pyarrow.parquet as pq

    return [t for t in pq.read_table(FIXTURES / "sample.parquet").column("text").to_pylist() if t]


def test_corpora_equal_tiktoken(pair):
    ours, oracle = pair
    texts = corpus_texts()
    for t in texts:
        assert ours.encode_ordinary(t) == oracle.encode_ordinary(t)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_random_text_equal_tiktoken(pair, text):
    ours, oracle = pair
    assert ours.encode_ordinary(text) == oracle.encode_ordinary(text)


def test_allowed_special(pair):
    ours, oracle = pair
    text = "a<|endoftext|>b <|endoftext|><|endoftext|>c<|endoftext"
    assert ours.encode(text, frozenset({"<|endoftext|>"})) == oracle.encode(text, allowed_special="all")
    assert ours.encode(text, frozenset()) == oracle.encode(text, disallowed_special=())


def test_heap_merge_equals_rescan(shared_path):
    ranks = _description("o200k_base", shared_path).vocab
    rng = random.Random(5)
    for n in (2, 3, 10, 64, 65, 200, 1000):
        for _ in range(20):
            piece = "".join(rng.choice("abcdeéxyz ") for _ in range(n)).encode()
            assert _merge_heap(piece, ranks) == _merge_rescan(piece, ranks)
    long = ("ab" * 5000).encode()
    assert b"".join(_id_bytes(ranks, _merge_heap(long, ranks))) == long


def _id_bytes(ranks, ids):
    by_id = {i: b for b, i in ranks.items()}
    return [by_id[i] for i in ids]


def test_only_rank_files_are_supported(shared_path):
    from tltok_jit.model.description import ModelDescription

    assert interim.supports(_description("r50k_base", shared_path))
    merged = ModelDescription(name="m", vocab={bytes([b]): b for b in range(256)}, merges=[], pattern="x")
    assert not interim.supports(merged)
    with pytest.raises(ValueError, match="tiktoken rank files"):
        InterimEncoder(merged)


# ---------------------------------------------------------------------------------------------
# The Encoding while its kernels compile: every call it answers from the Python encoder equals the
# kernels' answer.


@pytest.fixture
def compiling(monkeypatch):
    """Make the Encoding see a machine whose kernels are still compiling in a worker."""
    monkeypatch.setattr(warm, "background_enabled", lambda: True)
    monkeypatch.setattr(warm, "all_ready", lambda *stages: False)
    monkeypatch.setattr(warm, "stage_ready", lambda stage: False)
    monkeypatch.setattr(warm, "start_background", lambda *args: True)
    monkeypatch.setattr(warm, "worker_running", lambda: True)


@pytest.mark.parametrize("name", ENCODINGS)
def test_encoding_answers_while_compiling(name, shared_path, ours, compiling):
    import pyarrow as pa

    from tltok_jit import Encoding

    compiled = ours(name)
    enc = Encoding(_description(name, shared_path))
    assert enc.compile_state == "interim"
    assert enc.n_vocab == compiled.n_vocab
    texts = edge_case_strings()[:400] + ["x<|endoftext|>y", "\ud800 lone", ""]
    for t in texts[:200]:
        assert enc.encode(t, disallowed_special=()) == compiled.encode(t, disallowed_special=())
        assert enc.encode_ordinary(t) == compiled.encode_ordinary(t)
        assert np.array_equal(enc.encode_to_numpy(t, disallowed_special=()),
                              compiled.encode_to_numpy(t, disallowed_special=()))
    t = "x<|endoftext|>y"
    assert enc.encode(t, allowed_special="all") == compiled.encode(t, allowed_special="all")
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode(t)
    assert enc.encode_batch(texts, disallowed_special=()) == compiled.encode_batch(texts, disallowed_special=())
    assert enc.encode_ordinary_batch(texts) == compiled.encode_ordinary_batch(texts)
    ids, offs = enc.encode_batch_to_numpy(texts, disallowed_special=())
    cids, coffs = compiled.encode_batch_to_numpy(texts, disallowed_special=())
    assert np.array_equal(ids, cids) and np.array_equal(offs, coffs)
    with pytest.raises(TypeError, match="sequence item 1"):
        enc.encode_batch(["a", 3])
    col = pa.chunked_array([pa.array(texts[:10] + [None]), pa.array(texts[10:50])])
    assert enc.encode_arrow(col, disallowed_special=()).equals(compiled.encode_arrow(col, disallowed_special=()))
    assert enc.count_arrow(col, disallowed_special=()).equals(compiled.count_arrow(col, disallowed_special=()))
    assert enc.compile_state == "interim"
    all_ids = compiled.encode("héllo 世界 🙂") + [compiled.eot_token]
    assert enc.decode(all_ids) == compiled.decode(all_ids)
    assert enc.decode_bytes(all_ids[:2]) == compiled.decode_bytes(all_ids[:2])
    with pytest.raises(KeyError):
        enc.decode([compiled.n_vocab + 5])
    assert enc.decode_single_token_bytes(all_ids[0]) == compiled.decode_single_token_bytes(all_ids[0])
    assert enc.decode_tokens_bytes(all_ids) == compiled.decode_tokens_bytes(all_ids)
    assert enc.encode_single_token("hello") == compiled.encode_single_token("hello")
    assert enc.encode_single_token("<|endoftext|>") == compiled.eot_token
    with pytest.raises(KeyError):
        enc.encode_single_token("hello world, not one token")
    assert enc.compile_state == "interim"


def test_column_the_python_encoder_leaves_to_the_kernels(shared_path, ours, compiling, monkeypatch):
    """A disallowed special token in a column: the kernels' path reports the row (the Encoding then
    waits for its kernels; here they are compiled already)."""
    import pyarrow as pa

    from tltok_jit import Encoding

    enc = Encoding(_description("r50k_base", shared_path))
    monkeypatch.setattr(warm, "stage_ready", lambda stage: stage == "single")
    col = pa.array(["fine", "bad <|endoftext|>"])
    with pytest.raises(ValueError, match="row 1"):
        enc.encode_arrow(col)
    assert enc.compile_state == "compiled"  # the tables were built for that call
    assert enc.encode("hello") == ours("r50k_base").encode("hello")
