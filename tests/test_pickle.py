"""Pickle and copy of `Encoding`: by recipe (name, file paths + options, or the ranks themselves),
rebuilt once per process; ids after a round trip equal tiktoken's / tokenizers'; a spawn Pool gives the
serial result; the pickled bytes are the same every time (what `datasets` fingerprints)."""

from __future__ import annotations

import copy
import multiprocessing
import pickle

import pytest

import tltok_jit
from tltok_jit import encoding as encoding_module

from conftest import get_shared_path

TEXTS = ["hello world", "<|endoftext is plain here|>", "naïve café 東京 🙂", "  spaces\n\ttabs 12345", ""] * 3


def _hf_path(name: str) -> str:
    return str(get_shared_path(f"tokenizers/{name}/tokenizer.json"))


@pytest.mark.parametrize("name", ["gpt2", "r50k_base", "cl100k_base", "o200k_base"])
def test_pickle_round_trip_tiktoken(ours, tiktoken_oracle, name):
    enc = ours(name)
    oracle = tiktoken_oracle(name)
    back = pickle.loads(pickle.dumps(enc))
    assert back.name == enc.name and back.n_vocab == enc.n_vocab
    for t in TEXTS:
        assert back.encode(t) == oracle.encode(t)
    # a named encoding comes back as the shared instance of this process
    assert back is tltok_jit.get_encoding(name)
    assert len(pickle.dumps(enc)) < 200  # a reference, not the tables


@pytest.mark.parametrize("name", ["gpt2", "llama3", "mistral-7b"])
def test_pickle_round_trip_tokenizer_json(name):
    tokenizers = pytest.importorskip("tokenizers")
    path = _hf_path(name)
    enc = tltok_jit.from_file(path)
    oracle = tokenizers.Tokenizer.from_file(path)
    data = pickle.dumps(enc)
    assert path.encode() in data and len(data) < 500
    back = pickle.loads(data)
    assert back is not enc and back is pickle.loads(data)  # rebuilt once per process
    for t in TEXTS:
        assert back.encode(t, allowed_special="all") == oracle.encode(t, add_special_tokens=False).ids


def test_pickle_gpt2_files(ours):
    vocab = get_shared_path("tokenizers/gpt2/vocab.json")
    merges = get_shared_path("tokenizers/gpt2/merges.txt")
    enc = tltok_jit.from_gpt2_files(vocab, merges)
    back = pickle.loads(pickle.dumps(enc))
    for t in TEXTS:
        assert back.encode(t) == ours("gpt2").encode_ordinary(t)


def test_pickle_tiktoken_file(tiktoken_oracle):
    path = get_shared_path("tokenizers/tiktoken/r50k_base.tiktoken")
    enc = tltok_jit.Encoding.from_tiktoken_file(path, special_tokens={"<|endoftext|>": 50256, "<|x|>": 50257})
    back = pickle.loads(pickle.dumps(enc))
    assert back.encode("a<|x|>b", allowed_special="all") == [64, 50257, 65]
    assert back.encode("hello world") == tiktoken_oracle("r50k_base").encode("hello world")


def test_pickle_description_in_memory(ours):
    base = ours("r50k_base")
    enc = tltok_jit.Encoding(base._model)  # built from a description, no file or name to refer to
    data = pickle.dumps(enc)
    assert len(data) > 100_000  # the description itself travels
    back = pickle.loads(data)
    assert back.encode("hello world") == base.encode("hello world")
    assert pickle.loads(data) is back


def test_copy_and_deepcopy(ours, tiktoken_oracle):
    enc = ours("o200k_base")
    for dup in (copy.copy(enc), copy.deepcopy(enc), copy.deepcopy({"e": enc})["e"]):
        assert dup is not enc and type(dup) is type(enc)
        for t in TEXTS:
            assert dup.encode(t) == tiktoken_oracle("o200k_base").encode(t)
        assert dup.encode_batch(TEXTS, num_threads=2) == enc.encode_batch(TEXTS, num_threads=2)
        assert pickle.dumps(dup) == pickle.dumps(enc)


def test_copy_of_tokenizer_json_model():
    enc = tltok_jit.from_file(_hf_path("qwen2.5"))
    dup = copy.deepcopy(enc)
    for t in TEXTS:
        assert dup.encode(t, allowed_special="all") == enc.encode(t, allowed_special="all")
        assert dup.decode(dup.encode(t)) == t


def test_pickling_is_deterministic(ours):
    for enc in (ours("o200k_base"), tltok_jit.from_file(_hf_path("gpt2"))):
        first = pickle.dumps(enc)
        assert pickle.dumps(enc) == first
        assert pickle.dumps(pickle.loads(first)) == first
        assert pickle.dumps(copy.deepcopy(enc)) == first


def _pickled(enc) -> bytes:
    return pickle.dumps(enc)


def test_spawn_pool_map_equals_serial(ours):
    enc = ours("r50k_base")
    hf = tltok_jit.from_file(_hf_path("gpt2"))
    texts = TEXTS * 4
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        assert pool.map(enc.encode, texts, chunksize=3) == [enc.encode(t) for t in texts]
        assert pool.map(hf.encode, texts, chunksize=3) == [hf.encode(t) for t in texts]
        # another process pickles it to the same bytes (a stable fingerprint across runs)
        assert pool.map(_pickled, [enc, hf]) == [pickle.dumps(enc), pickle.dumps(hf)]


def test_unknown_recipe_is_refused():
    with pytest.raises(ValueError, match="recipe kind 'nope'"):
        encoding_module.rebuild(("nope", 1))
