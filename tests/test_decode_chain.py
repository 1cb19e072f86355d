"""Every streaming decoder equals `decode`, for every tokenizer: StreamDecoder, MultiStreamDecoder,
decode_incremental and token_pieces of each shared tokenizer.json (Mistral-7B's decoder chain
included) and of the tiktoken encodings; and the decoder chain itself (`decoder_chain.ChainStream`)
against `tokenizers`' decoders for chains no shared file has.

Oracle: `enc.decode(ids)` (itself checked against `tokenizers.Tokenizer.decode` here for the chain
model, and in tests/test_hf_json.py), and `tokenizers.decoders.*.decode` for the synthetic chains.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from conftest import get_ours, get_shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tltok_jit
from tltok_jit.hf.decoder_chain import WINDOW_LEN, ChainStream, DecoderChain
from tltok_jit.model.pipeline import decoders
from tltok_jit.streaming.decode import MultiStreamDecoder, StreamDecoder, token_tables

HF_FILES = ["gpt2", "llama3", "mistral-7b", "mistral-nemo", "qwen2.5", "smollm2"]
TIKTOKEN = ["r50k_base", "cl100k_base", "o200k_base"]
SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TEXTS = st.lists(st.sampled_from(list("ab ▁ \n.,") + ["你", "好", "ё", "😀", "\u0301", "ᚠ", "𝔘", "\ufffd", "<s>",
                                                       "<|endoftext|>", "</s>", "ℵ"]), max_size=30).map("".join)


@functools.lru_cache(maxsize=None)
def _hf(name: str):
    return tltok_jit.from_file(str(get_shared_path(f"tokenizers/{name}/tokenizer.json")))


def encoding(name: str):
    if name in TIKTOKEN:
        return get_ours(name)
    get_shared_path(f"tokenizers/{name}/tokenizer.json")  # skips with the path, also when cached
    return _hf(name)


@functools.lru_cache(maxsize=None)
def id_pools(name: str) -> tuple[list[int], list[int]]:
    """(every assigned id, the ids streaming must take care with: byte-fallback pieces, tokens that
    are not whole UTF-8 characters, added / special tokens)."""
    enc = encoding(name)
    t = token_tables(enc)
    valid = np.flatnonzero(t.valid)
    tricky = set(np.flatnonzero(t.valid & ~t.complete).tolist())
    if t.chain is not None:
        tricky |= set(t.chain.byte_ids)
    # added tokens sit first (Mistral-7B's <unk> <s> </s>) or last (the others')
    tricky |= {i for i in [*range(min(300, enc.n_vocab)), *range(max(0, enc.n_vocab - 300), enc.n_vocab)]
               if t.valid[i]}
    return valid.tolist(), sorted(tricky)


def ids_for(name: str):
    valid, tricky = id_pools(name)
    one = st.one_of(st.sampled_from(valid), st.sampled_from(tricky), st.sampled_from(tricky))
    encoded = TEXTS.map(lambda s: encoding(name).encode(s, allowed_special="all"))
    return st.one_of(st.lists(one, max_size=24), encoded,
                     st.tuples(encoded, st.lists(one, max_size=6)).map(lambda p: p[0] + p[1]))


def check_all_decoders(enc, ids: list[int], cuts: list[int]) -> None:
    full = enc.decode(ids)
    pieces = enc.token_pieces(ids)
    assert len(pieces) == len(ids) and "".join(pieces) == full, (ids, pieces, full)

    dec = StreamDecoder(enc)
    out = "".join(dec.push(i) for i in ids)
    assert full.startswith(out), (ids, out, full)
    assert out + dec.finish() == full, (ids, out, full)
    dec2 = StreamDecoder(enc)
    assert dec2.push_many(ids) + dec2.finish() == full

    state: dict = {}
    emitted = ""
    bounds = [0] + sorted({c % (len(ids) + 1) for c in cuts}) + [len(ids)]
    for a, b in zip(bounds, bounds[1:]):
        emitted += enc.decode_incremental(ids[a:b], state)
        assert state["text"] == emitted, (ids[:b], state["text"], emitted)
        assert enc.decode(ids[:b]).startswith(emitted), (ids[:b], emitted)
        assert full.startswith(emitted), (ids, emitted, full)
    assert emitted + enc.decode_incremental([], state, final=True) == full == state["text"]

    # three streams interleaved: ids[j] to stream j % 3, each stream's text is decode of its ids
    multi = MultiStreamDecoder(enc, 3)
    got = ["", "", ""]
    for j in range(0, len(ids), 2):
        chunk = ids[j:j + 2]
        streams = [(j + k) % 3 for k in range(len(chunk))]
        for s, d in zip(streams, multi.step(chunk, streams)):
            got[s] += d
    for s in range(3):
        assert got[s] + multi.finish(s) == enc.decode(ids[s::3]), (s, ids)


@functools.lru_cache(maxsize=None)
def _hf_oracle(name: str):
    try:
        import tokenizers
    except ImportError:
        return None
    return tokenizers.Tokenizer.from_file(str(get_shared_path(f"tokenizers/{name}/tokenizer.json")))


@pytest.mark.parametrize("name", HF_FILES + TIKTOKEN)
def test_every_decoder_equals_decode(name):
    encoding(name)
    oracle = None if name in TIKTOKEN else _hf_oracle(name)

    @SETTINGS
    @given(ids=ids_for(name), cuts=st.lists(st.integers(0, 64), max_size=6))
    def run(ids, cuts):
        if oracle is not None:  # decode itself, against tokenizers (added tokens included)
            assert encoding(name).decode(ids) == oracle.decode(ids, skip_special_tokens=False), ids
        check_all_decoders(encoding(name), ids, cuts)

    run()


def test_mistral_decoders_strip_metaspace_regression():
    enc = encoding("mistral-7b")
    ids = enc.encode("Hello world, how")
    assert enc.decode(ids) == "Hello world, how"
    assert enc.token_pieces(ids) == ["Hello", " world", ",", " how"]
    dec = StreamDecoder(enc)
    assert [dec.push(i) for i in ids] == ["Hello", " world", ",", " how"] and dec.finish() == ""
    state: dict = {}
    assert enc.decode_incremental(ids, state) == "Hello world, how" and state["text"] == "Hello world, how"
    multi = MultiStreamDecoder(enc, 2)
    deltas = [multi.step([i, i]) for i in ids]
    assert ["".join(d[s] for d in deltas) for s in (0, 1)] == ["Hello world, how"] * 2


def test_mistral_byte_fallback_run_is_held_while_well_formed():
    tokenizers = pytest.importorskip("tokenizers")
    enc = encoding("mistral-7b")
    hf = tokenizers.Tokenizer.from_file(str(get_shared_path("tokenizers/mistral-7b/tokenizer.json")))
    byte = {b: enc.encode_single_token(f"<0x{b:02X}>") for b in range(256)}
    # U+1F9A1 as four byte-fallback pieces after a word; then the same run broken by 0xFF
    word = enc.encode("Badger")
    good = word + [byte[b] for b in "🦡".encode()] + enc.encode(" ok")
    bad = word + [byte[b] for b in "🦡".encode()] + [byte[0xFF]] + enc.encode(" ok")
    for ids in (good, bad, bad[:-2], [byte[0x20]] + good):
        assert enc.decode(ids) == hf.decode(ids)
        check_all_decoders(enc, ids, [3, 7])
    assert hf.decode(bad).count("\ufffd") == 5  # the whole run: one U+FFFD per byte
    dec = StreamDecoder(enc)
    n = len(word)
    deltas = [dec.push(i) for i in bad[:n + 5]]
    # held while well-formed; the ill-formed 0xFF settles the whole run, one U+FFFD per byte
    assert deltas[n:] == [""] * 4 + ["\ufffd" * 5] and dec.pending == "🦡".encode() + b"\xff"
    deltas += [dec.push(i) for i in bad[n + 5:]]
    assert "".join(deltas) + dec.finish() == hf.decode(bad)
    # the leading-space strip applies to the first token only
    assert enc.decode([byte[0x20], byte[0x20]] + word) == hf.decode([byte[0x20], byte[0x20]] + word)
    assert "".join(enc.token_pieces(enc.encode(" a") + enc.encode(" b"))) == hf.decode(enc.encode(" a") + enc.encode(" b"))


def test_mistral_added_tokens_go_through_the_chain():
    tokenizers = pytest.importorskip("tokenizers")
    enc = encoding("mistral-7b")
    hf = tokenizers.Tokenizer.from_file(str(get_shared_path("tokenizers/mistral-7b/tokenizer.json")))
    ids = [1] + enc.encode("▁Hi") + [2, 0] + enc.encode(" there")
    assert enc.decode(ids) == hf.decode(ids, skip_special_tokens=False)
    check_all_decoders(enc, ids, [1, 2])
    tok = tltok_jit.build_tokenizer(tltok_jit.TokenizerSpec(
        "huggingface", {"tokenizer": str(get_shared_path("tokenizers/mistral-7b/tokenizer.json"))}))
    assert "".join(tok.token_pieces(ids)) == tok.decode(ids) == hf.decode(ids, skip_special_tokens=True)


def test_mistral_stream_is_a_bounded_window():
    enc = encoding("mistral-7b")
    ids = enc.encode("the quick brown fox " * 200)
    state: dict = {}
    for i in ids:
        enc.decode_incremental([i], state)
        assert len(state["_chain"]._win) < WINDOW_LEN
    assert state["text"] == enc.decode(ids)


# ------------------------------------------------------------------ the chain alone, against tokenizers

STRINGS = ["▁a", "b", "▁", "▁▁", "x▁y", " ", "a b", "", "<0x41>", "<0xE4>", "<0xBD>", "<0xA0>", "<0xFF>",
           "<0xF0>", "<0x9F>", "<0x20>", "<s>", "Ġhi", "Ċ", "âĢ", "ľ", "é", "xx", "_"]


def _hf_decoders():
    tokenizers = pytest.importorskip("tokenizers")
    d = tokenizers.decoders
    o = decoders
    return {
        "mistral": (d.Sequence([d.Replace("▁", " "), d.ByteFallback(), d.Fuse(), d.Strip(" ", 1, 0)]),
                    [o.Replace("▁", " "), o.ByteFallback(), o.Fuse(), o.Strip(" ", 1, 0)]),
        "metaspace_first": (d.Sequence([d.ByteFallback(), d.Metaspace("▁", "first")]),
                            [o.ByteFallback(), o.Metaspace("▁", "first")]),
        "metaspace_always": (d.Metaspace("▁", "always"), [o.Metaspace("▁", "always")]),
        "metaspace_never": (d.Metaspace("▁", "never"), [o.Metaspace("▁", "never")]),
        "strip_both_ends": (d.Sequence([d.Replace("▁", " "), d.Fuse(), d.Strip(" ", 2, 2)]),
                            [o.Replace("▁", " "), o.Fuse(), o.Strip(" ", 2, 2)]),
        "per_token_strip": (d.Sequence([d.Strip("x", 1, 1), d.Fuse()]), [o.Strip("x", 1, 1), o.Fuse()]),
        "bytelevel": (d.ByteLevel(), [o.ByteLevel()]),
        "bytelevel_strip": (d.Sequence([d.ByteLevel(), d.Strip(" ", 1, 1)]), [o.ByteLevel(), o.Strip(" ", 1, 1)]),
        "wide_replace_after_fuse": (d.Sequence([d.Fuse(), d.Replace("xx", "y")]),
                                    [o.Fuse(), o.Replace("xx", "y")]),
    }


@pytest.mark.parametrize("chain_name", sorted(["mistral", "metaspace_first", "metaspace_always", "metaspace_never",
                                               "strip_both_ends", "per_token_strip", "bytelevel", "bytelevel_strip",
                                               "wide_replace_after_fuse"]))
def test_chain_stream_equals_tokenizers_decoder(chain_name):
    hf_dec, steps = _hf_decoders()[chain_name]
    chain = DecoderChain(steps, STRINGS)
    assert chain.windowed == (chain_name != "wide_replace_after_fuse")

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(ids=st.lists(st.integers(0, len(STRINGS) - 1), max_size=16), cuts=st.lists(st.integers(0, 16), max_size=4))
    def run(ids, cuts):
        full = chain.decode(ids)
        try:
            expected = hf_dec.decode([STRINGS[i] for i in ids])
        except BaseException as e:  # tokenizers' Strip with stop > 0 panics on an empty string (strip.rs)
            if type(e).__name__ != "PanicException":
                raise
        else:
            assert full == expected, ids
        stream = ChainStream(chain)
        emitted = ""
        bounds = [0] + sorted({c % (len(ids) + 1) for c in cuts}) + [len(ids)]
        for a, b in zip(bounds, bounds[1:]):
            emitted += stream.push(ids[a:b])
            assert emitted + stream.held == chain.decode(ids[:b]), (ids[:b], emitted, stream.held)
        delta = stream.push([], final=True)
        assert stream.held == "" and emitted + delta == full, (ids, emitted + delta, full)

    run()


def test_mistral_multi_stream_masked_and_bytes_forms():
    enc = encoding("mistral-7b")
    byte = {b: enc.encode_single_token(f"<0x{b:02X}>") for b in range(256)}
    a = enc.encode("Hello 🦡 world") + [byte[b] for b in "ё".encode()] + enc.encode(" end")
    b = [byte[b] for b in "😀".encode()] + enc.encode(" two streams")
    la, lb = len(a), len(b)
    n = max(la, lb)
    a, b = a + [0] * (n - la), b + [0] * (n - lb)  # padding ids are masked out below
    masked, as_bytes = MultiStreamDecoder(enc, 2), MultiStreamDecoder(enc, 2)
    got_m, got_b = ["", ""], [b"", b""]
    for j in range(n):
        mask = np.array([j < la, j < lb])
        for s, d in enumerate(masked.step_masked([a[j], b[j]], mask)):
            got_m[s] += d
        if j == 3:  # stream 1 is inside the four byte pieces of U+1F600
            assert masked.pending(1) == "😀".encode() and masked.pending_count.tolist()[1] == 4
            assert masked.pending_bytes[1, :4].tobytes() == "😀".encode()
        fed = [s for s in (0, 1) if mask[s]]
        if fed:
            data, offs = as_bytes.step_bytes([(a, b)[s][j] for s in fed], fed)
            for k, s in enumerate(fed):
                got_b[s] += data[offs[k]:offs[k + 1]]
    for s, ids in enumerate((a[:la], b[:lb])):
        assert got_m[s] + masked.finish(s) == enc.decode(ids)
        assert got_b[s].decode() + as_bytes.finish(s) == enc.decode(ids)


def test_mistral_bad_ids_are_named():
    enc = encoding("mistral-7b")
    for bad in (-1, enc.n_vocab):
        with pytest.raises(ValueError, match=f"token id {bad} "):
            StreamDecoder(enc).push(bad)
        with pytest.raises(ValueError, match=f"token id {bad} "):
            enc.decode_incremental([5, bad], {})
        with pytest.raises(ValueError, match=f"token id {bad} "):
            enc.token_pieces([bad])
        with pytest.raises((ValueError, IndexError)):
            MultiStreamDecoder(enc, 1).step([bad])
    with pytest.raises(TypeError, match="token_id"):
        StreamDecoder(enc).push(1.5)
