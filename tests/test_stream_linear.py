"""Streaming decode stays linear on runs whose text is held back, and its text is `decode`'s.

The runs: Mistral-7B's byte-fallback runs (an emoji the vocabulary lacks, well-formed or broken by an
ill-formed byte early or late, ending mid-character, at the start of the text), a run of its U+FFFD
token and of its "▁", also with a Metaspace decoder in the file (with and without ByteFallback);
UTF-8 continuation bytes and unfinished characters on the byte-level files (GPT-2, Llama-3) and
r50k_base; byte pieces of the sentencepiece kind (llama2.model); the symbol_table's whitespace;
funasr_char's "@@" pieces, abbreviations and punctuation; and the synthetic decoder chains
tests/test_decode_chain.py also checks. Oracles: `decode`, and `tokenizers`, `sentencepiece` and
tiktoken on the same ids.

Linear work is checked by counting what is rendered (the ids through `DecoderChain.decode`, the
bytes through the sentencepiece kind's byte rendering, the words through funasr's
`sentence_postprocess`): a run twice as long may cost at most 2.5 times as much, where rendering
the held run again on every id costs 4 times; `bench/stream_linear.py` times every case.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import pytest
from conftest import REPO, SHARED, get_shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tltok_jit
from tltok_jit import TokenizerSpec, build_tokenizer
from tltok_jit.hf.decoder_chain import ChainStream, DecoderChain
from tltok_jit.kinds import funasr_char, sentencepiece
from tltok_jit.model.pipeline import decoders
from tltok_jit.streaming.decode import MultiStreamDecoder, StreamDecoder, token_tables

EMOJI = "\U0001F9A1"  # U+1F9A1 BADGER: no piece of Mistral-7B or Llama-2, so four byte-fallback ids
BADGER = EMOJI.encode()
FFFD = "\ufffd"
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def stream_texts(enc, ids: list[int]) -> dict[str, str]:
    """The text of every streaming form of `enc` over `ids`, by name."""
    out = {}
    dec = StreamDecoder(enc)
    out["push"] = "".join([dec.push(i) for i in ids]) + dec.finish()
    dec = StreamDecoder(enc)
    out["push_many"] = dec.push_many(ids) + dec.finish()
    state: dict = {}
    text = "".join([enc.decode_incremental([i], state) for i in ids]) + enc.decode_incremental([], state, final=True)
    assert text == state["text"]
    out["incremental"] = text
    state = {}
    for a in range(0, len(ids), 7):
        enc.decode_incremental(ids[a:a + 7], state)
    enc.decode_incremental([], state, final=True)
    out["incremental by 7"] = state["text"]
    pieces = enc.token_pieces(ids)
    assert len(pieces) == len(ids)
    out["pieces"] = "".join(pieces)
    multi = MultiStreamDecoder(enc, 2)
    got = ["", ""]
    for i in ids:
        for s, d in enumerate(multi.step([i, i])):
            got[s] += d
    out["multi"] = got[0] + multi.finish(0)
    out["multi, other stream"] = got[1] + multi.finish(1)
    return out


def assert_streams_equal(enc, ids: list[int], expected: str) -> None:
    assert enc.decode(ids) == expected
    for name, text in stream_texts(enc, ids).items():
        assert text == expected, (name, len(ids))


class RenderCount:
    """Counts what `cls.method` is given (the summed length of argument `arg`) while installed."""

    def __init__(self, monkeypatch, cls, method: str, arg: int = 1):
        self.total = 0
        orig = getattr(cls, method)

        def counted(*args):
            self.total += len(args[arg])
            return orig(*args)

        monkeypatch.setattr(cls, method, counted)


def assert_linear(work, make, n: int = 400) -> None:
    """`work(ids)` (what streaming `ids` rendered) grows linearly with the run `make(k)` builds."""
    small, large = work(make(n)), work(make(2 * n))
    assert large <= 2.5 * small, (small, large)


# ------------------------------------------------------------------ Mistral-7B: byte-fallback runs


@functools.lru_cache(maxsize=None)
def _mistral(path: str):
    tokenizers = pytest.importorskip("tokenizers")
    return tltok_jit.from_file(path), tokenizers.Tokenizer.from_file(path)


@pytest.fixture(scope="module")
def mistral():
    path = str(get_shared_path("tokenizers/mistral-7b/tokenizer.json"))
    enc, hf = _mistral(path)
    byte = {b: enc.encode_single_token(f"<0x{b:02X}>") for b in range(256)}
    return enc, hf, byte


def _mistral_runs(enc, byte, n: int = 1500) -> dict[str, list[int]]:
    """Runs of n emoji (4n byte ids), or of 4n other ids, by name."""
    word, end = enc.encode("Badger"), enc.encode(" ok")
    fffd, space = enc.encode_single_token(FFFD), enc.encode_single_token("\u2581")

    def run(data: bytes) -> list[int]:
        return [byte[b] for b in data]

    return {
        "emoji run": word + run(BADGER * n) + end,
        "emoji run starting the text": run(BADGER * n) + end,
        "emoji run left open": word + run(BADGER * n),
        "run ending mid-character": word + run(BADGER * n + b"\xf0\x9f") + end,
        "run left open mid-character": word + run(BADGER * n + b"\xf0\x9f\xa6"),
        "ill-formed byte late": word + run(BADGER * n + b"\xff" + BADGER * 3) + end,
        "ill-formed byte first": word + run(b"\xff" + BADGER * n) + end,
        "ill-formed run left open": word + run(BADGER * n + b"\x80" * 20),
        "lone continuation bytes": word + run(bytes(range(0x80, 0xC0)) * (n // 16)) + end,
        "surrogate late": word + run(BADGER * n + b"\xed\xa0\x80") + end,
        "two runs": word + run(BADGER * n) + end + run(BADGER * n + b"\xc3") + end,
        "U+FFFD token run": word + [fffd] * (4 * n) + end,
        "\u2581 run": word + [space] * (4 * n) + end,
        "\u2581 run starting the text": [space] * (4 * n) + end,
    }


@pytest.mark.parametrize("case", ["emoji run", "emoji run starting the text", "emoji run left open",
                                  "run ending mid-character", "run left open mid-character", "ill-formed byte late",
                                  "ill-formed byte first", "ill-formed run left open", "lone continuation bytes",
                                  "surrogate late", "two runs", "U+FFFD token run", "\u2581 run",
                                  "\u2581 run starting the text"])
def test_mistral_long_runs_equal_tokenizers(mistral, case):
    enc, hf, byte = mistral
    ids = _mistral_runs(enc, byte)[case]
    assert_streams_equal(enc, ids, hf.decode(ids))


def test_mistral_holds_a_run_only_while_it_may_change(mistral):
    enc, hf, byte = mistral
    word = enc.encode("Badger")
    dec = StreamDecoder(enc)
    assert "".join(dec.push(i) for i in word) == "Badger"
    # well-formed so far: one ill-formed byte would still make all of it U+FFFD
    good = [byte[b] for b in BADGER * 50]
    assert [dec.push(i) for i in good] == [""] * len(good) and dec.pending == BADGER * 50
    # the ill-formed byte settles the run: one U+FFFD per byte, then one per byte as they come
    assert dec.push(byte[0xFF]) == FFFD * 201
    assert [dec.push(i) for i in good[:8]] == [FFFD] * 8
    assert dec.pending == BADGER * 50 + b"\xff" + BADGER * 2
    tail = [dec.push(i) for i in enc.encode(" ok")]
    ids = word + good + [byte[0xFF]] + good[:8] + enc.encode(" ok")
    assert "Badger" + FFFD * 209 + "".join(tail) + dec.finish() == hf.decode(ids)
    # a U+FFFD token and a space can never change: emitted as they come
    dec = StreamDecoder(enc)
    fffd, space = enc.encode_single_token(FFFD), enc.encode_single_token("\u2581")
    assert [dec.push(i) for i in word + [fffd] * 20 + [space] * 20][len(word):] == [FFFD] * 20 + [" "] * 20


@pytest.mark.parametrize("case", ["emoji run", "ill-formed byte late", "ill-formed byte first", "two runs",
                                  "U+FFFD token run", "\u2581 run", "\u2581 run starting the text"])
def test_mistral_work_is_linear(mistral, monkeypatch, case):
    enc, hf, byte = mistral
    count = RenderCount(monkeypatch, DecoderChain, "decode")

    def work(ids):
        count.total = 0
        state: dict = {}
        for i in ids:
            enc.decode_incremental([i], state)
        enc.decode_incremental([], state, final=True)
        return count.total

    assert_linear(work, lambda n: _mistral_runs(enc, byte, n)[case], 300)


METASPACE_DECODERS = {
    "Metaspace": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
    "ByteFallback, Metaspace": {"type": "Sequence", "decoders": [
        {"type": "ByteFallback"},
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}]},
}


@pytest.mark.parametrize("decoder", sorted(METASPACE_DECODERS))
def test_metaspace_decoder_files(tmp_path, monkeypatch, decoder):
    """Mistral-7B's file with a Metaspace decoder (written to a temporary folder)."""
    tokenizers = pytest.importorskip("tokenizers")
    data = json.loads(get_shared_path("tokenizers/mistral-7b/tokenizer.json").read_text(encoding="utf-8"))
    data["decoder"] = METASPACE_DECODERS[decoder]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    enc, hf = tltok_jit.from_file(str(path)), tokenizers.Tokenizer.from_file(str(path))
    byte = {b: enc.encode_single_token(f"<0x{b:02X}>") for b in range(256)}
    for case, ids in _mistral_runs(enc, byte, 400).items():
        assert_streams_equal(enc, ids, hf.decode(ids))
    count = RenderCount(monkeypatch, DecoderChain, "decode")

    def work(ids):
        count.total = 0
        dec = StreamDecoder(enc)
        for i in ids:
            dec.push(i)
        dec.finish()
        return count.total

    for case in ("emoji run", "ill-formed byte late", "U+FFFD token run", "\u2581 run"):
        assert_linear(work, lambda n: _mistral_runs(enc, byte, n)[case], 300)


MISTRAL_POOL = ["emoji", "ff", "cont", "lead", "fffd", "space", "word", "special"]


@SETTINGS
@given(picks=st.lists(st.tuples(st.sampled_from(MISTRAL_POOL), st.integers(0, 3)), max_size=60),
       cuts=st.lists(st.integers(0, 80), max_size=6))
def test_mistral_random_runs_equal_tokenizers(mistral, picks, cuts):
    enc, hf, byte = mistral
    choice = {"emoji": [[byte[b] for b in BADGER]] + [[byte[b]] for b in BADGER[1:]],
              "ff": [[byte[0xFF]]], "cont": [[byte[0x80]], [byte[0xBF]]],
              "lead": [[byte[0xE4]], [byte[0xF0]], [byte[0xC3]], [byte[0xED]]],
              "fffd": [[enc.encode_single_token(FFFD)]], "space": [[enc.encode_single_token("\u2581")]],
              "word": [enc.encode(" ok"), enc.encode("Badger")], "special": [[1], [2], [0]]}
    ids = [i for kind, j in picks for i in choice[kind][j % len(choice[kind])]]
    expected = hf.decode(ids, skip_special_tokens=False)
    assert enc.decode(ids) == expected
    dec = StreamDecoder(enc)
    assert "".join(dec.push(i) for i in ids) + dec.finish() == expected
    state: dict = {}
    bounds = [0] + sorted({c % (len(ids) + 1) for c in cuts}) + [len(ids)]
    for a, b in zip(bounds, bounds[1:]):
        enc.decode_incremental(ids[a:b], state)
        assert enc.decode(ids[:b]).startswith(state["text"])
    enc.decode_incremental([], state, final=True)
    assert state["text"] == expected
    assert "".join(enc.token_pieces(ids)) == expected


# ------------------------------------------------------------------ byte-level files and r50k_base


def _unfinished_runs(byte: dict[int, int], word: list[int]) -> dict[str, list[int]]:
    def run(data: bytes) -> list[int]:
        return [byte[b] for b in data]

    return {
        "continuation bytes": word + run(bytes(range(0x80, 0xC0)) * 100) + word,
        "lead bytes": word + run(b"\xe4" * 3000) + word,
        "two of three": word + run(b"\xe4\xbd" * 2000) + word,
        "three of four": word + run(b"\xf0\x9f\xa6" * 2000) + word,
        "surrogates": word + run(b"\xed\xa0\x80" * 2000) + word,
        "emoji byte by byte": word + run(BADGER * 2000) + word,
        "left open": word + run(BADGER * 2000 + b"\xf0\x9f"),
    }


def _single_byte_ids(enc) -> dict[int, int]:
    return {b[0]: i for i, b in enumerate(token_tables(enc).token_bytes) if b is not None and len(b) == 1}


@pytest.mark.parametrize("name", ["gpt2", "llama3"])
def test_byte_level_files_unfinished_runs(name):
    tokenizers = pytest.importorskip("tokenizers")
    path = str(get_shared_path(f"tokenizers/{name}/tokenizer.json"))
    enc, hf = tltok_jit.from_file(path), tokenizers.Tokenizer.from_file(path)
    byte = _single_byte_ids(enc)
    for case, ids in _unfinished_runs(byte, enc.encode("ok")).items():
        expected = hf.decode(ids)
        assert_streams_equal(enc, ids, expected)
        dec = StreamDecoder(enc)
        for i in ids:
            dec.push(i)
            assert len(dec.pending) <= 3, case


def test_r50k_unfinished_runs(tiktoken_oracle):
    enc, ref = tltok_jit.get_encoding("r50k_base"), tiktoken_oracle("r50k_base")
    byte = _single_byte_ids(enc)
    for case, ids in _unfinished_runs(byte, enc.encode("ok")).items():
        assert_streams_equal(enc, ids, ref.decode(ids, errors="replace"))


# ------------------------------------------------------------------ the sentencepiece kind


@pytest.fixture(scope="module")
def llama2():
    spm = pytest.importorskip("sentencepiece")
    path = str(get_shared_path("tokenizers/sentencepiece/llama2.model"))
    tok = build_tokenizer(TokenizerSpec("sentencepiece", {"model": path}))
    byte = {int(p[3:5], 16): i for i, p in enumerate(tok.model.pieces) if len(p) == 6 and p.startswith("<0x")}
    return tok, spm.SentencePieceProcessor(model_file=path), byte


def _incremental(tok, ids: list[int], chunk: int = 1) -> str:
    state: dict = {}
    for a in range(0, len(ids), chunk):
        tok.decode_incremental(ids[a:a + chunk], state)
    tok.decode_incremental([], state, final=True)
    return state["text"]


def test_sentencepiece_byte_runs_equal_sentencepiece(llama2):
    tok, sp, byte = llama2
    word, end = tok.encode("Badger"), tok.encode(" ok")

    def run(data: bytes) -> list[int]:
        return [byte[b] for b in data]

    for ids in (word + run(BADGER * 1500) + end, run(BADGER * 1500) + end, word + run(BADGER * 1500 + b"\xf0\x9f"),
                word + run(BADGER * 1500 + b"\xff" + BADGER) + end, word + run(bytes(range(0x80, 0xC0)) * 90) + end,
                word + run(b"\xe4\xbd" * 2000) + end):
        expected = sp.decode(ids)
        assert tok.decode(ids) == expected
        assert _incremental(tok, ids) == expected
        assert _incremental(tok, ids, 5) == expected
        assert "".join(tok.token_pieces(ids)) == expected


def test_sentencepiece_holds_only_an_unfinished_character(llama2):
    tok, sp, byte = llama2
    ids = tok.encode("Badger") + [byte[b] for b in BADGER * 60 + b"\xff\xe4\xbd"] + tok.encode(" ok")
    state: dict = {}
    for n, i in enumerate(ids):
        tok.decode_incremental([i], state)
        so_far = tok.decode(ids[:n + 1])
        assert so_far.startswith(state["text"]) and len(so_far) - len(state["text"]) <= 3
    assert tok.decode_incremental([], state, final=True) == "" and state["text"] == sp.decode(ids)


def test_sentencepiece_work_is_linear(llama2, monkeypatch):
    tok, sp, byte = llama2
    count = RenderCount(monkeypatch, sentencepiece.SentencePieceTokenizer, "_byte_surfaces")
    word = tok.encode("Badger")

    def work(ids):
        count.total = 0
        assert _incremental(tok, ids) == sp.decode(ids)
        return count.total

    assert_linear(work, lambda k: word + [byte[b] for b in BADGER * k] + word, 500)


@SETTINGS
@given(data=st.lists(st.sampled_from([0xF0, 0x9F, 0xA6, 0xA1, 0xFF, 0x80, 0xE4, 0xBD, 0xC3, 0x41, -1, -2]),
                     max_size=40), chunk=st.integers(1, 6))
def test_sentencepiece_random_runs_equal_sentencepiece(llama2, data, chunk):
    tok, sp, byte = llama2
    word = tok.encode("ok")
    ids = [i for b in data for i in ([byte[b]] if b >= 0 else word if b == -1 else [1, 2])]
    assert _incremental(tok, ids, chunk) == tok.decode(ids) == sp.decode(ids)


# ------------------------------------------------------------------ symbol_table and funasr_char


def test_symbol_table_whitespace_runs(tmp_path):
    units = tmp_path / "units.txt"
    units.write_text("<blank> 0\n<unk> 1\n\u2581 2\nhello 3\n\u2581world 4\n<sos/eos> 5\n", encoding="utf-8")
    tok = build_tokenizer(TokenizerSpec("symbol_table", {"units": units}))
    for ids in ([2] * 5000 + [3] + [2] * 5000 + [4] + [2] * 3000, [3] + [2, 0] * 4000 + [4, 5], [2] * 3000):
        expected = tok.decode(ids)
        assert _incremental(tok, ids) == expected and _incremental(tok, ids, 9) == expected
        assert "".join(tok.token_pieces(ids)) == expected
        state: dict = {}
        for a in range(0, len(ids), 1000):
            tok.decode_incremental(ids[a:a + 1000], state)
            before = dict(state)  # a copy of the state goes on unchanged by later calls
            tok.decode_incremental([3], dict(state))
            assert state == before


FUNASR_TOKENS = ["<blank>", "<s>", "</s>", "hel@@", "lo", "a", "b", "c", "ok", "world", "\uff0c", "\u3002", "\u4f60",
                 "\u597d", "1", "'", "\u00e9", "x@@", "<unk>"]
FUNASR_ODD = FUNASR_TOKENS + [" ", "x y", "a<s>", "\u4e00x@@", "a\u4e00", ""]


@functools.lru_cache(maxsize=None)
def _funasr(tmp: str, odd: bool):
    path = Path(tmp) / ("odd.json" if odd else "tokens.json")
    path.write_text(json.dumps(FUNASR_ODD if odd else FUNASR_TOKENS, ensure_ascii=False), encoding="utf-8")
    return build_tokenizer(TokenizerSpec("funasr_char", {"tokens": path}))


@pytest.fixture(scope="module")
def funasr(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("funasr"))
    return lambda odd=False: _funasr(tmp, odd)


def _funasr_runs(ix) -> dict[str, list[int]]:
    return {
        "@@ pieces": [ix("ok")] + [ix("hel@@")] * 3000 + [ix("lo")],
        "@@ pieces across Chinese": [ix("hel@@")] * 1500 + [ix("\u4f60")] * 1500 + [ix("lo")],
        "@@ pieces left open": [ix("ok")] + [ix("hel@@")] * 3000,
        "abbreviation": [ix("ok")] + [ix("a"), ix("b"), ix("c")] * 1000 + [ix("\u4f60")],
        "abbreviation left open": [ix("a"), ix("b")] * 1500,
        "punctuation after a word": [ix("world")] + [ix("\uff0c")] * 3000 + [ix("\u597d")],
        "words": [ix("ok"), ix("world")] * 1500 + [ix("\u3002")],
        "specials between": [ix("hel@@")] + [ix("<blank>")] * 3000 + [ix("lo")],
        "Chinese": [ix("\u4f60"), ix("\u597d"), ix("1")] * 1000,
    }


def test_funasr_long_runs(funasr, monkeypatch):
    tok = funasr()
    assert tok._mode_stable
    count = RenderCount(monkeypatch, funasr_char, "sentence_postprocess", 0)
    for case, ids in _funasr_runs(FUNASR_TOKENS.index).items():
        expected = tok.decode(ids)
        count.total = 0
        assert _incremental(tok, ids) == expected, case
        assert _incremental(tok, ids, 11) == expected, case
        assert "".join(tok.token_pieces(ids)) == expected, case
        assert count.total == 0, case  # streaming never renders the list again


def test_funasr_mode_sensitive_vocabulary(funasr):
    tok = funasr(odd=True)
    assert not tok._mode_stable
    ix = FUNASR_ODD.index
    runs = dict(_funasr_runs(ix))
    runs["all alphabetic, then a digit"] = [ix("x y")] + [ix("ok")] * 2000 + [ix("1")] + [ix("ok")] * 100
    runs["all alphabetic to the end"] = [ix("x y")] + [ix("ok"), ix("a")] * 1000
    runs["all Chinese to the end"] = [ix(" ")] + [ix("\u4f60")] * 2000
    runs["mixed reading unlike the mode's"] = [ix("a\u4e00"), ix("b")] * 1000
    for case, ids in runs.items():
        expected = tok.decode(ids)
        assert _incremental(tok, ids) == expected, case
        assert "".join(tok.token_pieces(ids)) == expected, case
    # once a token rules out both single-script modes, the mixed mode's text is emitted as it comes
    state: dict = {}
    tok.decode_incremental([ix("x y"), ix("ok"), ix("1")], state)
    assert state["text"] == "x yok1"


@SETTINGS
@given(picks=st.lists(st.integers(0, len(FUNASR_ODD) - 1), max_size=40), chunk=st.integers(1, 5),
       odd=st.booleans())
def test_funasr_random_equals_decode(funasr, picks, chunk, odd):
    tok = funasr(odd)
    ids = [p % tok.vocab_size for p in picks]
    expected = tok.decode(ids)
    state: dict = {}
    for a in range(0, len(ids), chunk):
        tok.decode_incremental(ids[a:a + chunk], state)
        assert tok.decode(ids[:a + chunk]).startswith(state["text"]), ids
    tok.decode_incremental([], state, final=True)
    assert state["text"] == expected, ids


# ------------------------------------------------------------------ synthetic chains


STRINGS = ["\u2581a", "b", "\u2581", "<0xF0>", "<0x9F>", "<0xA6>", "<0xA1>", "<0xFF>", "\u013e", "\u00e2\u0122",
           "\u00e9", "", "\ufffd", " "]


def _chains():
    tokenizers = pytest.importorskip("tokenizers")
    d, o = tokenizers.decoders, decoders
    return {
        "mistral": (d.Sequence([d.Replace("▁", " "), d.ByteFallback(), d.Fuse(), d.Strip(" ", 1, 0)]),
                    [o.Replace("▁", " "), o.ByteFallback(), o.Fuse(), o.Strip(" ", 1, 0)]),
        "metaspace_first": (d.Sequence([d.ByteFallback(), d.Metaspace("▁", "first")]),
                            [o.ByteFallback(), o.Metaspace("▁", "first")]),
        "strip_both_ends": (d.Sequence([d.Replace("▁", " "), d.Fuse(), d.Strip(" ", 2, 2)]),
                            [o.Replace("▁", " "), o.Fuse(), o.Strip(" ", 2, 2)]),
        "bytelevel": (d.ByteLevel(), [o.ByteLevel()]),
        "bytelevel_strip": (d.Sequence([d.ByteLevel(), d.Strip(" ", 1, 1)]), [o.ByteLevel(), o.Strip(" ", 1, 1)]),
    }


CHAIN_RUNS = {  # token strings repeated: what each chain holds back (or used to)
    "emoji bytes": ["<0xF0>", "<0x9F>", "<0xA6>", "<0xA1>"],
    "ill-formed bytes": ["<0xFF>", "<0xF0>"],
    "spaces": ["\u2581"],
    "continuation bytes": ["\u013e"],
    "U+FFFD": ["\ufffd"],
}


@pytest.mark.parametrize("chain_name", ["mistral", "metaspace_first", "strip_both_ends", "bytelevel",
                                        "bytelevel_strip"])
@pytest.mark.parametrize("run", sorted(CHAIN_RUNS))
def test_chain_long_runs_equal_tokenizers_and_stay_linear(monkeypatch, chain_name, run):
    hf_dec, steps = _chains()[chain_name]
    chain = DecoderChain(steps, STRINGS)
    unit = [STRINGS.index(s) for s in CHAIN_RUNS[run]]
    head, tail = [STRINGS.index("\u2581a")], [STRINGS.index("b")]

    def make(k):
        return head + (unit * k)[:k] + tail

    for ids in (make(3000), make(3000)[:-1], make(3000)[1:]):
        expected = hf_dec.decode([STRINGS[i] for i in ids])
        assert chain.decode(ids) == expected
        stream = ChainStream(chain)
        emitted = "".join([stream.push((i,)) for i in ids])
        assert emitted + stream.held == expected
        assert emitted + stream.push((), final=True) == expected
    count = RenderCount(monkeypatch, DecoderChain, "decode")

    def work(ids):
        count.total = 0
        stream = ChainStream(chain)
        for i in ids:
            stream.push((i,))
        stream.push((), final=True)
        return count.total

    assert_linear(work, make, 1000)


# ------------------------------------------------------------------ the benchmark, at small sizes


def test_bench_stream_linear_runs_small(capsys):
    get_shared_path("tokenizers/mistral-7b/tokenizer.json")
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from bench import stream_linear

    assert stream_linear.SHARED == SHARED
    status = stream_linear.main(["--sizes", "100,1000", "--repeat", "3"])
    out = capsys.readouterr().out
    assert "| mistral-7b: emoji byte-fallback run | push |" in out
    assert status == 0, out
