"""tltok-jit: exact tiktoken / Hugging Face byte-level BPE token ids from Numba kernels."""

from __future__ import annotations

import gc as _gc

# Importing numba and the kernels' modules creates ~50,000 long-lived objects; the cyclic collector's
# passes over them during the import free next to nothing and cost ~10% of a warm start.
_gc_was_enabled = _gc.isenabled()
_gc.disable()
try:
    from .encoding import Encoding, rebuild
finally:
    if _gc_was_enabled:
        _gc.enable()
from .errors import (
    ArrowRowError,
    DisallowedSpecialTokenError,
    EncodeNotSupportedError,
    PackingError,
    PaddingError,
    ResumeError,
    RankFileHashError,
    RankFileUnavailableError,
    TltokError,
    TokenIdError,
    TokenizerAssetError,
    TokenizerError,
    TokenizerFileError,
    UnknownTokenError,
    UnknownTokenizerKindError,
    UnsupportedTokenizerError,
)
from .model.description import AddedToken, ModelDescription
from .model.openai_models import encoding_name_for_model
from .engine.special_policy import SpecialPolicy

__all__ = [
    "AddedToken",
    "ArrowRowError",
    "DisallowedSpecialTokenError",
    "RankFileHashError",
    "RankFileUnavailableError",
    "TltokError",
    "UnknownTokenError",
    "UnsupportedTokenizerError",
    "EncodeNotSupportedError",
    "PackingError",
    "PaddingError",
    "ResumeError",
    "TokenIdError",
    "Tokenizer",
    "TokenizerAssetError",
    "TokenizerError",
    "TokenizerSpec",
    "UnknownTokenizerKindError",
    "build_tokenizer",
    "list_tokenizer_kinds",
    "register_tokenizer",
    "ByteTokenizer",
    "Encoding",
    "ModelDescription",
    "MultiStreamDecoder",
    "SpecialPolicy",
    "StreamDecoder",
    "TokenizerFileError",
    "encoding_for_model",
    "encoding_name_for_model",
    "from_file",
    "from_gpt2_files",
    "get_encoding",
    "list_encoding_names",
    "train_bpe",
]
from .kernels.jit import VERSION as __version__  # noqa: E402  (one place: the kernel cache is keyed by it)


def get_encoding(name: str) -> Encoding:
    """A known encoding by name ("gpt2", "r50k_base", "p50k_base", "cl100k_base", "o200k_base", ...).

    The rank file is found in $TLTOK_DATA, then the user cache, then the copy embedded in the package
    (r50k_base/gpt2, cl100k_base, o200k_base), then downloaded; every source is hash-checked.
    Instances are shared (built once per process).

    >>> enc = tltok_jit.get_encoding("o200k_base")
    >>> enc.encode("hello world"), enc.decode([24912, 2375])
    ([24912, 2375], 'hello world')
    >>> tltok_jit.get_encoding("o200k_base") is enc
    True
    """
    return rebuild(("encoding", name))


def encoding_for_model(model_name: str) -> Encoding:
    """The encoding an OpenAI model uses (tiktoken's tables); KeyError for an unknown model."""
    return get_encoding(encoding_name_for_model(model_name))


def from_file(path, config=None, *, name: str | None = None) -> Encoding:
    """An Encoding from a Hugging Face `tokenizer.json` (byte-level BPE, and SentencePiece-style BPE
    such as Mistral-7B's); `config` is the optional `tokenizer_config.json` whose
    `added_tokens_decoder` entries missing from the file are added (with a warning when one does not
    land on its declared id). Unsupported features are refused with an error naming the JSON field.

    HF matches added tokens in text, tiktoken's encode_ordinary never does: call
    `enc.encode(text, allowed_special="all")` for HF's `encode(text, add_special_tokens=False).ids`,
    add `add_special_tokens=True` for HF's default. See `tltok_jit.loaders.hf_json`.

    A file whose model is WordPiece (the BERT family) gives a `tltok_jit.kinds.wordpiece.WordPieceTokenizer`,
    one whose model is Unigram (T5, XLM-R) a `tltok_jit.kinds.unigram.UnigramTokenizer`."""
    from .loaders.hf_unigram import is_unigram_file
    from .loaders.hf_wordpiece import is_wordpiece_file

    if is_wordpiece_file(path):
        from .kinds.wordpiece import WordPieceTokenizer

        return WordPieceTokenizer.from_file(path, config, name=name)
    if is_unigram_file(path):
        from .kinds.unigram import UnigramTokenizer

        return UnigramTokenizer.from_file(path, config, name=name)
    from .loaders.hf_json import read_hf_json

    from .engine.recipe import abspath

    return Encoding(read_hf_json(path, config, name=name),
                    _recipe=("hf_json", abspath(path), abspath(config), name))


def from_gpt2_files(vocab_path, merges_path, *, name: str | None = None) -> Encoding:
    """An Encoding from GPT-2's classic `vocab.json` + `merges.txt` (same ids as its tokenizer.json)."""
    from .loaders.gpt2_files import read_gpt2_files

    from .engine.recipe import abspath

    return Encoding(read_gpt2_files(vocab_path, merges_path, name=name),
                    _recipe=("gpt2_files", abspath(vocab_path), abspath(merges_path), name))


def list_encoding_names() -> list[str]:
    from .loaders.known_encodings import list_encoding_names as names

    return names()


def __getattr__(attr: str):
    # Imported lazily so `import tltok_jit` stays cheap.
    if attr == "ByteTokenizer":
        from .kinds.bytetok import ByteTokenizer

        return ByteTokenizer
    if attr in ("StreamDecoder", "MultiStreamDecoder"):
        from .streaming import decode as stream

        return getattr(stream, attr)
    if attr in _TOKENIZER_CONTRACT:
        from . import tokenizer

        return getattr(tokenizer, attr)
    if attr == "train_bpe":
        from .training import train_bpe

        return train_bpe
    if attr in ("build_tokenizer", "list_tokenizer_kinds", "register_tokenizer"):
        from . import kinds

        return getattr(kinds, attr)
    raise AttributeError(f"module 'tltok_jit' has no attribute {attr!r}")


# The tokenizer registry (tltok_jit.tokenizer, tltok_jit.kinds), imported on first use.
_TOKENIZER_CONTRACT = frozenset({"Tokenizer", "TokenizerSpec"})
