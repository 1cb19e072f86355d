"""The rest of tiktoken's Encoding API, each against tiktoken itself: decode_batch, decode_bytes_batch,
decode_with_offsets, encode_with_unstable, is_special_token, token_byte_values, _pat_str,
_special_tokens, _mergeable_ranks, the constructor from ranks, encoding_for_model."""

from __future__ import annotations

import pickle

import pytest

import tltok_jit
from tltok_jit import TokenizerFileError

NAMES = ["r50k_base", "cl100k_base", "o200k_base"]
TEXTS = ["hello world", "naïve café 東京 🙂", "x\n\n  y\t", "", "<|endoftext|>a", "🙂" * 3, "1234567"]


@pytest.fixture(scope="module", params=NAMES)
def pair(request, ours, tiktoken_oracle):
    return ours(request.param), tiktoken_oracle(request.param)


def test_attributes(pair):
    enc, oracle = pair
    assert enc._pat_str == oracle._pat_str
    assert enc._special_tokens == oracle._special_tokens
    assert enc._mergeable_ranks == oracle._mergeable_ranks
    assert enc.token_byte_values() == oracle.token_byte_values()
    for t in (0, 100, enc.eot_token, enc.n_vocab - 1, *oracle._special_tokens.values()):
        assert enc.is_special_token(t) == oracle.is_special_token(t)
    with pytest.raises(TypeError, match="token must be an int"):
        enc.is_special_token("<|endoftext|>")


def test_decode_batches(pair):
    enc, oracle = pair
    batch = [oracle.encode(t, allowed_special="all") for t in TEXTS] + [[oracle.encode("é")[0]][:1]]
    batch.append(oracle.encode("東")[:1])  # a cut character
    for errors in ("replace", "ignore", "surrogateescape"):
        assert enc.decode_batch(batch, errors=errors) == oracle.decode_batch(batch, errors=errors)
    assert enc.decode_bytes_batch(batch, num_threads=2) == oracle.decode_bytes_batch(batch, num_threads=2)
    assert enc.decode_batch([]) == []


def test_decode_with_offsets(pair):
    enc, oracle = pair
    for t in TEXTS:
        ids = oracle.encode(t, allowed_special="all")
        assert enc.decode_with_offsets(ids) == oracle.decode_with_offsets(ids)
    cut = oracle.encode("東")[:1]
    if oracle.decode_bytes(cut) != "東".encode():
        with pytest.raises(UnicodeDecodeError):
            oracle.decode_with_offsets(cut)
        with pytest.raises(UnicodeDecodeError):
            enc.decode_with_offsets(cut)


UNSTABLE = ["hello fanta", "hello ", "hello", "a  ", "x\n", "x\n\n ", "  !", "print(", "東京", "naïv",
            "12", "<|endoftext|>", "a<|endoftext|>", "a<|endoftext|>b c", "", " ", "\t\t", "é"]


@pytest.mark.parametrize("text", UNSTABLE)
def test_encode_with_unstable(pair, text):
    enc, oracle = pair
    want_stable, want = oracle.encode_with_unstable(text, allowed_special="all")
    stable, got = enc.encode_with_unstable(text, allowed_special="all")
    assert stable == want_stable
    assert sorted(map(tuple, got)) == sorted(map(tuple, want))
    assert len(got) == len({tuple(c) for c in got})


def test_encode_with_unstable_special_policy(pair):
    enc, oracle = pair
    with pytest.raises(ValueError, match="disallowed special token"):
        oracle.encode_with_unstable("a<|endoftext|>")
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode_with_unstable("a<|endoftext|>")
    for kw in ({"disallowed_special": ()}, {"allowed_special": {"<|endoftext|>"}}):
        want = oracle.encode_with_unstable("a<|endoftext|> b", **kw)
        got = enc.encode_with_unstable("a<|endoftext|> b", **kw)
        assert got[0] == want[0] and sorted(map(tuple, got[1])) == sorted(map(tuple, want[1]))


def test_byte_pair_encode_reference(ours, tiktoken_oracle):
    from tltok_jit.engine.unstable import byte_pair_encode

    oracle = tiktoken_oracle("cl100k_base")
    ranks = ours("cl100k_base")._mergeable_ranks
    for piece in [b"hello", b" world", b"\xe6\x9d\xb1\xe4\xba", b"aaaaaaa", b"x"]:
        assert byte_pair_encode(piece, ranks) == oracle._encode_single_piece(piece)


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-2024-05-13", "gpt-4", "gpt-3.5-turbo-0301", "o1",
                                   "text-davinci-003", "davinci", "gpt2", "text-davinci-edit-001",
                                   "gpt-oss-120b", "ft:gpt-4o:org", "text-embedding-3-small"])
def test_encoding_name_for_model(model):
    tiktoken = pytest.importorskip("tiktoken")
    assert tltok_jit.encoding_name_for_model(model) == tiktoken.encoding_name_for_model(model)


def test_encoding_for_model(ours):
    ours("o200k_base")
    assert tltok_jit.encoding_for_model("gpt-4o") is tltok_jit.get_encoding("o200k_base")
    with pytest.raises(KeyError, match="Could not automatically map nope"):
        tltok_jit.encoding_for_model("nope")


def test_model_tables_are_tiktokens():
    model = pytest.importorskip("tiktoken.model")
    from tltok_jit.model import openai_models as model_names

    assert model_names.MODEL_TO_ENCODING == model.MODEL_TO_ENCODING
    assert list(model_names.MODEL_PREFIX_TO_ENCODING.items()) == list(model.MODEL_PREFIX_TO_ENCODING.items())


def test_constructor_from_ranks_extends_o200k(ours, tiktoken_oracle):
    import tiktoken

    base, tbase = ours("o200k_base"), tiktoken_oracle("o200k_base")
    kw = dict(name="o200k_x", pat_str=base._pat_str, mergeable_ranks=base._mergeable_ranks,
              special_tokens={**base._special_tokens, "<|x|>": 200100})
    enc = tltok_jit.Encoding(**kw)
    oracle = tiktoken.Encoding(**{**kw, "mergeable_ranks": tbase._mergeable_ranks})
    assert enc.name == "o200k_x" and enc.n_vocab == oracle.n_vocab == 200101
    for t in ["hi <|x|> there<|endoftext|>", "<|x|><|x|>", "plain text 東京"]:
        assert enc.encode(t, allowed_special="all") == oracle.encode(t, allowed_special="all")
        assert enc.encode(t, disallowed_special=()) == oracle.encode(t, disallowed_special=())
    assert enc.decode([200100, 24912]) == oracle.decode([200100, 24912])
    with pytest.raises(ValueError, match="disallowed special token '<|x|>'"):
        enc.encode("<|x|>")
    # positional name, as tiktoken also allows, and pickling by the ranks themselves
    enc2 = tltok_jit.Encoding("o200k_x", pat_str=kw["pat_str"], mergeable_ranks=kw["mergeable_ranks"],
                              special_tokens=kw["special_tokens"])
    data = pickle.dumps(enc2)
    assert pickle.dumps(enc2) == data
    back = pickle.loads(data)
    assert back.encode("<|x|>", allowed_special="all") == [200100]
    assert pickle.loads(data) is back


def test_constructor_from_small_ranks(tiktoken_oracle):
    import tiktoken

    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257}
    pat = tiktoken_oracle("r50k_base")._pat_str
    kw = dict(name="tiny", pat_str=pat, mergeable_ranks=ranks, special_tokens={"<|e|>": 258},
              explicit_n_vocab=259)
    enc, oracle = tltok_jit.Encoding(**kw), tiktoken.Encoding(**kw)
    for t in ["abc abcab", "<|e|>abc", "zz"]:
        assert enc.encode(t, allowed_special="all") == oracle.encode(t, allowed_special="all")


def test_constructor_errors(ours):
    base = ours("r50k_base")
    ok = dict(name="x", pat_str=base._pat_str, mergeable_ranks=base._mergeable_ranks, special_tokens={})
    with pytest.raises(TypeError, match="missing: pat_str"):
        tltok_jit.Encoding("x", mergeable_ranks={}, special_tokens={})
    with pytest.raises(TypeError, match="mergeable_ranks maps bytes to int ranks"):
        tltok_jit.Encoding(**{**ok, "mergeable_ranks": {"a": 1}})
    with pytest.raises(TypeError, match="special_tokens maps non-empty str"):
        tltok_jit.Encoding(**{**ok, "special_tokens": {"<|a|>": 1.5}})
    with pytest.raises(TypeError, match="takes no name"):
        tltok_jit.Encoding(base._model, name="y")
    with pytest.raises(TokenizerFileError, match="explicit_n_vocab=5"):
        tltok_jit.Encoding(**ok, explicit_n_vocab=5)
    with pytest.raises(TokenizerFileError, match="no scanner for split pattern"):
        tltok_jit.Encoding(**{**ok, "pat_str": r"\w+|\s+"})


def test_shared_special_ids_keep_their_order_through_pickle(ours, tiktoken_oracle):
    import tiktoken

    base = ours("r50k_base")
    for specials in ({"<|a|>": 50257, "<|b|>": 50257}, {"<|b|>": 50257, "<|a|>": 50257}):
        kw = dict(name="shared", pat_str=base._pat_str, special_tokens=specials)
        enc = tltok_jit.Encoding(**kw, mergeable_ranks=base._mergeable_ranks)
        oracle = tiktoken.Encoding(**kw, mergeable_ranks=tiktoken_oracle("r50k_base")._mergeable_ranks)
        back = pickle.loads(pickle.dumps(enc))
        # tiktoken's choice comes from a Rust HashMap's order (not defined); ours is the first token
        assert back.decode([50257]) == enc.decode([50257]) == next(iter(specials))
        assert back.encode("<|a|><|b|>", allowed_special="all") == oracle.encode("<|a|><|b|>", allowed_special="all")
