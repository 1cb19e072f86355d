"""The tokenizer registry: kinds, specs, errors for unknown kinds and missing assets."""

from __future__ import annotations

import pytest

import tltok_jit
from tltok_jit.kinds import unregister_tokenizer
from tltok_jit import (
    TokenizerAssetError,
    TokenizerError,
    TokenizerSpec,
    UnknownTokenizerKindError,
    build_tokenizer,
    list_tokenizer_kinds,
    register_tokenizer,
)

BUILTIN = ["funasr_char", "huggingface", "sentencepiece", "symbol_table", "tiktoken", "whisper"]


def test_builtin_kinds_listed():
    assert set(BUILTIN) <= set(list_tokenizer_kinds())
    assert list_tokenizer_kinds() == sorted(list_tokenizer_kinds())


def test_unknown_kind_lists_known_ones():
    with pytest.raises(UnknownTokenizerKindError) as e:
        build_tokenizer(TokenizerSpec("no_such_kind"))
    msg = str(e.value)
    assert "no_such_kind" in msg
    for k in BUILTIN:
        assert k in msg
    assert isinstance(e.value, ValueError)


def test_missing_asset_names_key_and_path(tmp_path):
    missing = tmp_path / "units.txt"
    with pytest.raises(TokenizerAssetError) as e:
        build_tokenizer(TokenizerSpec("symbol_table", {"units": missing}))
    assert "'units'" in str(e.value) and str(missing) in str(e.value)


def test_absent_asset_key_named():
    with pytest.raises(TokenizerAssetError) as e:
        build_tokenizer(TokenizerSpec("symbol_table", {}))
    assert "'units'" in str(e.value)


def test_register_duplicate_raises_unless_replace():
    calls = []

    def factory(spec):
        calls.append(spec)
        return "built"

    register_tokenizer("test_kind_dup", factory)
    try:
        with pytest.raises(ValueError, match="already registered"):
            register_tokenizer("test_kind_dup", factory)
        with pytest.raises(ValueError, match="already registered"):
            register_tokenizer("symbol_table", factory)
        register_tokenizer("test_kind_dup", lambda spec: "replaced", replace=True)
        assert build_tokenizer(TokenizerSpec("test_kind_dup")) == "replaced"
        assert "test_kind_dup" in list_tokenizer_kinds()
    finally:
        unregister_tokenizer("test_kind_dup")
    assert "test_kind_dup" not in list_tokenizer_kinds()


def test_register_rejects_bad_factory():
    with pytest.raises(TypeError):
        register_tokenizer("test_kind_bad", 42)
    with pytest.raises(TypeError):
        register_tokenizer("", lambda s: None)


def test_build_needs_a_spec():
    with pytest.raises(TypeError):
        build_tokenizer({"kind": "symbol_table"})


def test_error_hierarchy():
    for name in ("UnknownTokenizerKindError", "TokenizerAssetError", "TokenIdError", "EncodeNotSupportedError"):
        cls = getattr(tltok_jit, name)
        assert issubclass(cls, TokenizerError) and issubclass(cls, ValueError)
