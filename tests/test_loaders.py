"""The .tiktoken reader: equality with tiktoken's own loader on the real files, and one error per kind of
malformed file, each naming the file and the 1-based line."""

from __future__ import annotations

import base64
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tltok_jit.loaders import load_tiktoken_ranks, read_tiktoken_model
from tltok_jit.loaders.tiktoken_file import _fast, _slow
from tltok_jit.model.description import AddedToken, ModelDescription, TokenizerFileError

from conftest import get_shared_path

tiktoken_load = pytest.importorskip("tiktoken.load")


SHARED_FILES = ["r50k_base", "cl100k_base", "o200k_base", "whisper_multilingual"]


def _shared(stem: str) -> pathlib.Path:
    """The shared rank file, else the package's embedded copy (in a temporary tokenizers/tiktoken/
    folder); skips naming the file when there is neither."""
    return get_shared_path(f"tokenizers/tiktoken/{stem}.tiktoken")


# ---------------------------------------------------------------------------------------------- real files


@pytest.mark.parametrize("stem", SHARED_FILES)
def test_shared_file_equals_tiktoken_loader(stem):
    path = _shared(stem)
    expected = tiktoken_load.load_tiktoken_bpe(str(path))
    ours = load_tiktoken_ranks(path, allow_empty_token=(stem == "whisper_multilingual"))
    assert len(ours) == len(expected)
    assert ours == expected
    # the published files are sorted and dense: ranks exactly 0..n-1
    assert sorted(ours.values()) == list(range(len(ours)))
    assert list(ours.values()) == list(range(len(ours)))


@pytest.mark.parametrize("stem", SHARED_FILES)
def test_fast_path_takes_the_real_files(stem):
    """The vectorised path (not the line-by-line fallback) must accept every published file."""
    path = _shared(stem)
    data = path.read_bytes()
    allow = stem == "whisper_multilingual"
    fast = _fast(data, frozenset(), allow)
    assert fast is not None
    assert fast == _slow(path, data, frozenset(), allow)


def test_whisper_empty_token_is_refused_by_default():
    path = _shared("whisper_multilingual")
    with pytest.raises(TokenizerFileError) as ei:
        load_tiktoken_ranks(path)
    msg = str(ei.value)
    assert f"{path}:50257:" in msg and "empty token" in msg
    assert load_tiktoken_ranks(path, allow_empty_token=True)[b""] == 50256


def test_r50k_description():
    path = _shared("r50k_base")
    d = read_tiktoken_model(path, name="r50k_base", pattern="P", special_tokens={"<|endoftext|>": 50256},
                            pattern_kind="gpt2", explicit_n_vocab=50257)
    assert isinstance(d, ModelDescription)
    assert d.name == "r50k_base" and d.pattern == "P" and d.pattern_kind == "gpt2"
    assert d.merges is None and d.ignore_merges is True
    assert d.added_tokens == [AddedToken("<|endoftext|>", 50256, special=True)]
    assert d.special_tokens == {"<|endoftext|>": 50256}
    assert d.source == str(path) and d.explicit_n_vocab == 50257
    assert len(d.vocab) == 50256 and all(bytes([b]) in d.vocab for b in range(256))


# ------------------------------------------------------------------------------------------ small files

# 256 single bytes, then a few multi-byte tokens: 300 lines, ranks 0..299
_BASE_TOKENS = [bytes([b]) for b in range(256)] + [b"ab" * (i % 7 + 1) + bytes([i]) for i in range(44)]


def _lines(tokens=_BASE_TOKENS) -> list[bytes]:
    return [base64.b64encode(t) + b" " + str(r).encode() for r, t in enumerate(tokens)]


def _write(tmp_path, lines: list[bytes], *, name="bad.tiktoken", trailing_newline=True) -> pathlib.Path:
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + (b"\n" if trailing_newline else b""))
    return path


def _expect_error(path, line: int, *words: str, **kw) -> str:
    with pytest.raises(TokenizerFileError) as ei:
        load_tiktoken_ranks(path, **kw)
    msg = str(ei.value)
    assert f"{path}:{line}:" in msg, msg
    for w in words:
        assert w in msg, msg
    # the vectorised path must refuse it too (it returns None and leaves the diagnosis to the slow path)
    data = path.read_bytes().replace(b"\r\n", b"\n")
    assert _fast(data, frozenset(kw.get("reserved_ids", ())), kw.get("allow_empty_token", False)) is None
    return msg


def test_good_small_file(tmp_path):
    path = _write(tmp_path, _lines(), name="good.tiktoken")
    ours = load_tiktoken_ranks(path)
    assert ours == tiktoken_load.load_tiktoken_bpe(str(path))
    assert ours == {t: r for r, t in enumerate(_BASE_TOKENS)}


# (description, 1-based line to corrupt, replacement line, words the message must contain)
_CORRUPTIONS = [
    ("bad base64 character", 17, b"QU!D 16", ["invalid base64"]),
    ("base64 length not a multiple of 4", 18, b"QUJ 17", ["invalid base64"]),
    ("base64 missing padding", 19, b"QQ 18", ["invalid base64"]),
    ("padding inside a token", 20, b"QQ==QUJD 19", ["invalid base64"]),
    ("missing rank", 21, b"QUJDRA==", ["missing rank"]),
    ("missing rank after the space", 21, b"QUJDRA== ", ["missing rank"]),
    ("non-integer rank", 22, b"QUJDRA== abc", ["not a non-negative decimal integer"]),
    ("fractional rank", 22, b"QUJDRA== 21.0", ["not a non-negative decimal integer"]),
    ("plus-signed rank", 22, b"QUJDRA== +21", ["not a non-negative decimal integer"]),
    # ':' is '9' + 1: a digit-by-digit parser without a digit check reads "0:" as 10, the expected rank
    ("rank with a non-digit that parses", 11, base64.b64encode(bytes([10])) + b" 0:",
     ["not a non-negative decimal integer"]),
    ("negative rank", 23, b"QUJDRA== -22", ["negative rank -22"]),
    ("three fields", 24, b"QUJDRA== 23 24", ["one space"]),
    ("tab separator", 24, b"QUJDRA==\t23", ["missing rank"]),
    ("two spaces", 24, b"QUJDRA==  23", ["one space"]),
    ("empty token (leading space)", 25, b" 24", ["empty token"]),
    ("empty token '='", 25, b"= 24", ["empty token"]),
    ("duplicate token bytes", 30, base64.b64encode(bytes([5])) + b" 29", ["duplicate token", "line 6"]),
    ("duplicate rank", 30, base64.b64encode(b"\xff\xfe\xfd") + b" 28", ["duplicate rank 28", "line 29"]),
    ("rank gap", 280, base64.b64encode(b"zzz") + b" 1000", ["rank 279 is missing"]),
]


@pytest.mark.parametrize("what,line,replacement,words", _CORRUPTIONS, ids=[c[0] for c in _CORRUPTIONS])
def test_malformed_line_is_named(tmp_path, what, line, replacement, words):
    lines = _lines()
    lines[line - 1] = replacement
    path = _write(tmp_path, lines)
    _expect_error(path, line, *words)


def test_rank_gap_names_the_line_after_the_hole(tmp_path):
    lines = _lines()
    # ranks 0..99, then 101..300: rank 100 is missing, line 101 is where the jump shows
    lines = lines[:100] + [base64.b64encode(t) + b" " + str(r + 1).encode() for r, t in
                           enumerate(_BASE_TOKENS[100:], 100)]
    path = _write(tmp_path, lines)
    _expect_error(path, 101, "rank 100 is missing", "0..n-1")
    # the same hole is fine when a special token is to take id 100
    assert load_tiktoken_ranks(path, reserved_ids={100})[_BASE_TOKENS[100]] == 101


def test_ranks_not_starting_at_zero(tmp_path):
    path = _write(tmp_path, [base64.b64encode(t) + b" " + str(r + 1).encode() for r, t in enumerate(_BASE_TOKENS)])
    _expect_error(path, 1, "rank 0 is missing")


def test_truncated_last_line(tmp_path):
    lines = _lines()
    lines[-1] = lines[-1].split(b" ")[0]  # the rank was cut off, and the newline with it
    path = _write(tmp_path, lines, trailing_newline=False)
    _expect_error(path, len(lines), "missing rank", "truncated")


def test_truncated_inside_the_token(tmp_path):
    lines = _lines()
    lines[-1] = lines[-1][:3]
    path = _write(tmp_path, lines, trailing_newline=False)
    _expect_error(path, len(lines), "")


def test_huge_rank_is_a_gap_not_a_memory_bomb(tmp_path):
    lines = _lines()
    lines[-1] = lines[-1].split(b" ")[0] + b" " + b"9" * 40
    path = _write(tmp_path, lines)
    _expect_error(path, len(lines), "rank 299 is missing")


def test_empty_file(tmp_path):
    path = _write(tmp_path, [], trailing_newline=False)
    with pytest.raises(TokenizerFileError, match="no tokens"):
        load_tiktoken_ranks(path)
    assert str(path) in str(pytest.raises(TokenizerFileError, load_tiktoken_ranks, path).value)


def test_missing_file_is_an_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_tiktoken_ranks(tmp_path / "nope.tiktoken")


# ---------------------------------------------------------------------------------- tolerated variations


@pytest.mark.parametrize("variant", ["crlf", "no_final_newline", "blank_lines", "shuffled", "leading_zero"])
def test_tolerated_variants_match_tiktoken(tmp_path, variant):
    lines = _lines()
    sep, end = b"\n", b"\n"
    if variant == "crlf":
        sep = end = b"\r\n"
    elif variant == "no_final_newline":
        end = b""
    elif variant == "blank_lines":
        lines = lines[:10] + [b""] + lines[10:] + [b""]
    elif variant == "shuffled":
        lines = lines[::-1]
    elif variant == "leading_zero":
        lines[7] = lines[7].split(b" ")[0] + b" 007"
    path = tmp_path / "v.tiktoken"
    path.write_bytes(sep.join(lines) + end)
    assert load_tiktoken_ranks(path) == tiktoken_load.load_tiktoken_bpe(str(path))


# -------------------------------------------------------------------------------- read_tiktoken_model


def _small_model(tmp_path, specials, **kw):
    path = _write(tmp_path, _lines(), name="small.tiktoken")
    return path, read_tiktoken_model(path, name="small", pattern=r"\S+", special_tokens=specials, **kw)


def test_model_special_tokens(tmp_path):
    path, d = _small_model(tmp_path, {"<|a|>": 300, "<|b|>": 305}, pattern_kind=None)
    assert d.added_tokens == [AddedToken("<|a|>", 300), AddedToken("<|b|>", 305)]
    assert all(t.special and not (t.lstrip or t.rstrip or t.single_word or t.normalized) for t in d.added_tokens)
    assert d.vocab == {t: r for r, t in enumerate(_BASE_TOKENS)}
    assert d.merges is None and d.ignore_merges and d.source == str(path)


def test_model_special_collides_with_rank(tmp_path):
    with pytest.raises(TokenizerFileError) as ei:
        _small_model(tmp_path, {"<|a|>": 300, "<|b|>": 65})
    msg = str(ei.value)
    assert "small.tiktoken" in msg and "'<|b|>'" in msg and "65" in msg and "b'A'" in msg


def test_model_shared_special_ids(tmp_path):
    with pytest.raises(TokenizerFileError, match="share id 300"):
        _small_model(tmp_path, {"<|a|>": 300, "<|b|>": 300})
    _, d = _small_model(tmp_path, {"<|a|>": 300, "<|b|>": 300}, allow_shared_special_ids=True)
    assert d.special_tokens == {"<|a|>": 300, "<|b|>": 300}


@pytest.mark.parametrize("bad_id", [-1, "7", 1.5, True])
def test_model_invalid_special_id(tmp_path, bad_id):
    with pytest.raises(TokenizerFileError, match="invalid id"):
        _small_model(tmp_path, {"<|a|>": bad_id})


def test_model_explicit_n_vocab(tmp_path):
    _, d = _small_model(tmp_path, {"<|a|>": 300}, explicit_n_vocab=301)
    assert d.explicit_n_vocab == 301
    with pytest.raises(TokenizerFileError) as ei:
        _small_model(tmp_path, {"<|a|>": 300}, explicit_n_vocab=302)
    msg = str(ei.value)
    assert "explicit_n_vocab=302" in msg and "largest id is 300" in msg and "small.tiktoken" in msg
    # max id + 1 matches, but id 300 is unused: the count does not
    with pytest.raises(TokenizerFileError, match="302 ids|301 ids"):
        _small_model(tmp_path, {"<|a|>": 301}, explicit_n_vocab=302)


def test_model_hole_filled_by_special_token(tmp_path):
    """p50k_base's layout: ranks 0..k-1 and k+1..n, with <|endoftext|> = k."""
    k = 280
    lines = [base64.b64encode(t) + b" " + str(r if r < k else r + 1).encode() for r, t in enumerate(_BASE_TOKENS)]
    path = _write(tmp_path, lines, name="p50k_like.tiktoken")
    d = read_tiktoken_model(path, name="p", pattern="x", special_tokens={"<|endoftext|>": k},
                            explicit_n_vocab=len(_BASE_TOKENS) + 1)
    assert max(d.vocab.values()) == len(_BASE_TOKENS)
    assert k not in set(d.vocab.values())
    with pytest.raises(TokenizerFileError) as ei:
        read_tiktoken_model(path, name="p", pattern="x", special_tokens={"<|endoftext|>": k + 5})
    assert f"{path}:{k + 1}:" in str(ei.value) and f"rank {k} is missing" in str(ei.value)


# ---------------------------------------------------------------------- property: fast == slow == tiktoken

_tokens = st.lists(st.binary(min_size=1, max_size=12), min_size=1, max_size=40, unique=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=_tokens, data=st.data())
def test_property_valid_files(tmp_path, tokens, data):
    perm = data.draw(st.permutations(range(len(tokens))))
    lines = [base64.b64encode(t) + b" " + str(r).encode() for t, r in zip(tokens, perm)]
    end = data.draw(st.sampled_from([b"\n", b""]))
    raw = b"\n".join(lines) + end
    path = tmp_path / "p.tiktoken"
    path.write_bytes(raw)
    expected = dict(zip(tokens, perm))
    assert _fast(raw, frozenset(), False) == expected
    assert load_tiktoken_ranks(path) == expected == tiktoken_load.load_tiktoken_bpe(str(path))


@settings(max_examples=400, deadline=None)
@given(tokens=_tokens, data=st.data())
def test_property_fast_never_accepts_what_slow_refuses(tokens, data):
    lines = [base64.b64encode(t) + b" " + str(r).encode() for r, t in enumerate(tokens)]
    raw = bytearray(b"\n".join(lines) + b"\n")
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(raw) - 1))
        op = data.draw(st.sampled_from(["set", "delete", "insert"]))
        c = data.draw(st.sampled_from(b" \n=-+0123456789AQZaz/\r\t\x00\xff"))
        if op == "set":
            raw[i] = c
        elif op == "delete":
            del raw[i]
        else:
            raw.insert(i, c)
    raw = bytes(raw)
    allow = data.draw(st.booleans())
    reserved = frozenset(data.draw(st.sets(st.integers(0, 50), max_size=3)))
    fast = _fast(raw, reserved, allow) if raw else None
    try:
        slow = _slow("mem.tiktoken", raw, reserved, allow)
    except TokenizerFileError as e:
        assert fast is None, f"fast accepted what slow refused: {e}"
        assert "mem.tiktoken" in str(e)
    else:
        if fast is not None:
            assert fast == slow
