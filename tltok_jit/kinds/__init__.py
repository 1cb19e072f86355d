"""The tokenizer registry: kind name -> factory(spec) -> Tokenizer.

Built-in kinds are registered as "module:function" strings and imported only when a spec of that
kind is built, so `import tltok_jit` never loads a kind's tables or kernels.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable

from ..tokenizer import Tokenizer, TokenizerSpec, UnknownTokenizerKindError

__all__ = ["build_tokenizer", "list_tokenizer_kinds", "register_tokenizer", "unregister_tokenizer"]

Factory = Callable[[TokenizerSpec], Tokenizer]

_BUILTIN = {
    "symbol_table": "tltok_jit.kinds.symbol_table:build",
    "tiktoken": "tltok_jit.kinds.tiktoken_kind:build",
    "huggingface": "tltok_jit.kinds.huggingface:build",
    "whisper": "tltok_jit.kinds.whisper:build",
    "funasr_char": "tltok_jit.kinds.funasr_char:build",
    "sentencepiece": "tltok_jit.kinds.sentencepiece:build",
}

_FACTORIES: dict[str, Factory | str] = dict(_BUILTIN)
_LOCK = threading.Lock()


def register_tokenizer(kind: str, factory: Factory | str, *, replace: bool = False) -> None:
    """Register `factory` (a callable taking a TokenizerSpec, or a "module:function" string) for
    `kind`. Registering a kind that exists raises unless `replace=True`."""
    if not isinstance(kind, str) or not kind:
        raise TypeError(f"a tokenizer kind is a non-empty str, got {kind!r}")
    if not (callable(factory) or (isinstance(factory, str) and ":" in factory)):
        raise TypeError(f"factory for {kind!r} must be callable or 'module:function', got {factory!r}")
    with _LOCK:
        if kind in _FACTORIES and not replace:
            raise ValueError(f"tokenizer kind {kind!r} is already registered (pass replace=True to replace it)")
        _FACTORIES[kind] = factory


def unregister_tokenizer(kind: str) -> None:
    """Remove a registered kind (a built-in kind comes back as its built-in factory)."""
    with _LOCK:
        if kind not in _FACTORIES:
            raise UnknownTokenizerKindError(f"tokenizer kind {kind!r} is not registered")
        if kind in _BUILTIN:
            _FACTORIES[kind] = _BUILTIN[kind]
        else:
            del _FACTORIES[kind]


def list_tokenizer_kinds() -> list[str]:
    """The registered kinds, sorted."""
    return sorted(_FACTORIES)


def _resolve(kind: str) -> Factory:
    factory = _FACTORIES.get(kind)
    if factory is None:
        raise UnknownTokenizerKindError(
            f"unknown tokenizer kind {kind!r}; registered kinds: {', '.join(list_tokenizer_kinds())}")
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory


def build_tokenizer(spec: TokenizerSpec) -> Tokenizer:
    """The tokenizer `spec` describes, built by its kind's factory."""
    if not isinstance(spec, TokenizerSpec):
        raise TypeError(f"build_tokenizer takes a TokenizerSpec, got {type(spec).__name__}")
    return _resolve(spec.kind)(spec)
