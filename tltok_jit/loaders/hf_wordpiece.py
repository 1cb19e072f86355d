"""Hugging Face `tokenizer.json` files with a WordPiece model (the BERT family) -> `WordPieceModel`.

Supported subset (anything else is refused with `UnsupportedTokenizerError` naming the JSON field):

* model: `WordPiece` with `unk_token` (in the vocabulary), `continuing_subword_prefix` (any string,
  "" included), `max_input_chars_per_word` (0 .. 2**20).
* normalizer: null, `BertNormalizer` with any `clean_text`, `handle_chinese_chars`, `strip_accents`
  (null: follows `lowercase`, as HF) and `lowercase`; or `NFD`, `Lowercase`, `StripAccents` alone or
  in a `Sequence` (NFD first, each once).
* pre_tokenizer: `BertPreTokenizer`, `WhitespaceSplit`, `Punctuation` (behavior Isolated), a `Sequence`
  of them; `Whitespace` (alone); or null (the whole text one word).
* post_processor: null, `TemplateProcessing` (single and pair templates), `BertProcessing`.
* decoder: `WordPiece` (prefix, cleanup) or null (tokens joined by spaces, as HF).
* added_tokens: `special`; `normalized` true only without a normalizer; `lstrip` / `rstrip` /
  `single_word` true are refused. Ids are assigned as `tokenizers` assigns them (hf_json's rules).
* truncation (`max_length`, `stride`, `strategy`, `direction`) and padding (`BatchLongest` or
  `Fixed`, `direction`, `pad_to_multiple_of`, `pad_id`, `pad_type_id`) are kept: they apply to
  `encode_batch_padded` when the call gives none, as `tokenizers`' `encode_batch` applies them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..errors import TokenizerFileError, UnsupportedTokenizerError
from ..kernels.wordpiece import PRE_BERT, PRE_NONE, PRE_PUNCT, PRE_WHITESPACE, PRE_WHITESPACE_SPLIT
from ..model.pipeline.batch_settings import (Padding, Template, Truncation, read_padding, read_template,  # noqa: F401
                                             read_truncation)
from .hf_json import check_vocab_ids, load_json, read_added_tokens, shown

__all__ = ["NormalizerSpec", "Padding", "PRE_NONE", "Template", "Truncation", "WordPieceModel",
           "is_wordpiece_file", "read_wordpiece_json"]

MAX_WORD_CHARS = 1 << 20


@dataclass(frozen=True)
class NormalizerSpec:
    """What the normalizer does to each character, in this order: clean_text, Chinese spacing, NFD
    (`nfd` or `strip_accents`), nonspacing marks dropped (`strip_accents`, BertNormalizer's), combining
    marks dropped (`strip_combining` "before"), lowercase, combining marks dropped ("after")."""

    clean_text: bool = False
    handle_chinese_chars: bool = False
    strip_accents: bool = False  # BertNormalizer's (null resolved: follows lowercase)
    lowercase: bool = False
    nfd: bool = False
    strip_combining: str | None = None  # the StripAccents normalizer: "before" or "after" Lowercase


@dataclass
class WordPieceModel:
    """A WordPiece tokenizer.json, read and checked (see the module docstring)."""

    source: str
    name: str
    vocab: dict[str, int]
    unk_id: int
    prefix: str
    max_chars: int
    normalizer: NormalizerSpec | None
    pre_mode: int
    added: list = field(default_factory=list)
    template: Template | None = None
    decoder: tuple[str, bool] | None = None  # (prefix, cleanup); None: joined by spaces
    truncation: Truncation | None = None
    padding: Padding | None = None
    id_to_token: list = field(default_factory=list)

    @property
    def special_ids(self) -> frozenset[int]:
        return frozenset(t.id for t in self.added if t.special)


def is_wordpiece_file(path) -> bool:
    """Whether `path` is a tokenizer.json whose model is WordPiece (False for anything unreadable:
    the BPE loader then reports it)."""
    try:
        with open(os.fspath(path), "rb") as f:
            raw = f.read()
    except OSError:
        return False
    if b'"WordPiece"' not in raw:
        return False
    try:
        d = load_json(path)
    except TokenizerFileError:
        return False
    return isinstance(d, dict) and isinstance(d.get("model"), dict) and d["model"].get("type") == "WordPiece"


def _bool(obj: dict, key: str, where: str, fieldname: str, default=None) -> bool:
    v = obj.get(key, default)
    if not isinstance(v, bool):
        raise TokenizerFileError(f"{where}: {fieldname}.{key} must be true or false, got {shown(v)}")
    return v


def _count(v, where: str, fieldname: str, least: int = 0, most: int | None = None) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < least or (most is not None and v > most):
        bound = f"{least}.." + (str(most) if most is not None else "")
        raise TokenizerFileError(f"{where}: {fieldname} must be an integer in {bound}, got {shown(v)}")
    return v


def _bert_normalizer(obj: dict, where: str) -> NormalizerSpec:
    known = {"type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase"}
    extra = sorted(set(obj) - known)
    if extra:
        raise UnsupportedTokenizerError(where, f"normalizer.{extra[0]}", obj[extra[0]])
    lower = _bool(obj, "lowercase", where, "normalizer", True)
    strip = obj.get("strip_accents")
    if strip is not None and not isinstance(strip, bool):
        raise TokenizerFileError(f"{where}: normalizer.strip_accents must be true, false or null, got {shown(strip)}")
    return NormalizerSpec(clean_text=_bool(obj, "clean_text", where, "normalizer", True),
                          handle_chinese_chars=_bool(obj, "handle_chinese_chars", where, "normalizer", True),
                          strip_accents=lower if strip is None else strip, lowercase=lower)


_SEQUENCE_STEPS = ("NFD", "Lowercase", "StripAccents")


def _normalizer(obj, where: str) -> NormalizerSpec | None:
    """BertNormalizer, or NFD / Lowercase / StripAccents (alone or in a Sequence, NFD first, each once)."""
    if obj is None:
        return None
    t = obj.get("type") if isinstance(obj, dict) else obj
    if t == "BertNormalizer":
        return _bert_normalizer(obj, where)
    if t == "Sequence":
        steps = obj.get("normalizers")
        if not isinstance(steps, list):
            raise TokenizerFileError(f"{where}: normalizer.normalizers must be a list")
        names = []
        for k, step in enumerate(steps):
            st = step.get("type") if isinstance(step, dict) else step
            if st not in _SEQUENCE_STEPS:
                raise UnsupportedTokenizerError(where, f"normalizer.normalizers[{k}].type", st,
                                                "in a Sequence: NFD, Lowercase, StripAccents")
            names.append(st)
        fieldname = "normalizer.normalizers"
    elif t in _SEQUENCE_STEPS:
        names = [t]
        fieldname = "normalizer"
    else:
        raise UnsupportedTokenizerError(where, "normalizer.type", t, "WordPiece files: BertNormalizer, NFD, "
                                        "Lowercase, StripAccents, a Sequence of the last three, or null")
    if len(set(names)) != len(names) or ("NFD" in names and names[0] != "NFD"):
        # lowercase or mark removal before NFD is another function (U+0130 lowercases to i + U+0307)
        raise UnsupportedTokenizerError(where, fieldname, [{"type": n} for n in names],
                                        "NFD first, each step at most once")
    comb = None
    if "StripAccents" in names:
        comb = "after" if "Lowercase" in names and names.index("Lowercase") < names.index("StripAccents") else "before"
    return NormalizerSpec(nfd="NFD" in names, lowercase="Lowercase" in names, strip_combining=comb)


def _pre_step(obj, where: str, fieldname: str) -> int:
    """One pre-tokenizer as (splits on whitespace, isolates punctuation) bits: 1 | 2."""
    t = obj.get("type") if isinstance(obj, dict) else obj
    if t == "BertPreTokenizer":
        return 3
    if t == "WhitespaceSplit":
        return 1
    if t == "Punctuation":
        behavior = obj.get("behavior", "Isolated")
        if behavior != "Isolated":
            raise UnsupportedTokenizerError(where, f"{fieldname}.behavior", behavior, "Isolated only")
        return 2
    raise UnsupportedTokenizerError(where, f"{fieldname}.type", t, "WordPiece files: BertPreTokenizer, "
                                    "WhitespaceSplit, Punctuation (isolated), a Sequence of them, Whitespace "
                                    "(alone), or null")


def _pre_tokenizer(obj, where: str) -> int:
    """The kernel's pre-tokenizer mode. Splitting on whitespace and isolating punctuation commute
    (neither creates what the other splits on), so a Sequence is the union of its steps."""
    if obj is None:
        return PRE_NONE
    if isinstance(obj, dict) and obj.get("type") == "Whitespace":
        return PRE_WHITESPACE
    if isinstance(obj, dict) and obj.get("type") == "Sequence":
        steps = obj.get("pretokenizers")
        if not isinstance(steps, list):
            raise TokenizerFileError(f"{where}: pre_tokenizer.pretokenizers must be a list")
        if len(steps) == 1 and isinstance(steps[0], dict) and steps[0].get("type") == "Whitespace":
            return PRE_WHITESPACE
        bits = 0
        for k, step in enumerate(steps):
            bits |= _pre_step(step, where, f"pre_tokenizer.pretokenizers[{k}]")
    else:
        bits = _pre_step(obj, where, "pre_tokenizer")
    return {0: PRE_NONE, 1: PRE_WHITESPACE_SPLIT, 2: PRE_PUNCT, 3: PRE_BERT}[bits]


def _decoder(obj, where: str) -> tuple[str, bool] | None:
    if obj is None:
        return None
    t = obj.get("type") if isinstance(obj, dict) else obj
    if t != "WordPiece":
        raise UnsupportedTokenizerError(where, "decoder.type", t, "WordPiece files: the WordPiece decoder or null")
    prefix = obj.get("prefix", "##")
    if not isinstance(prefix, str):
        raise TokenizerFileError(f"{where}: decoder.prefix must be a string, got {shown(prefix)}")
    return prefix, _bool(obj, "cleanup", where, "decoder", True)


def read_wordpiece_json(path, config=None, *, name: str | None = None) -> WordPieceModel:
    """Read a WordPiece tokenizer.json (and optionally its tokenizer_config.json's added tokens)."""
    where = os.fspath(path)
    d = load_json(path)
    if not isinstance(d, dict):
        raise TokenizerFileError(f"{where}: the top level must be a JSON object")
    if name is None:
        parent = os.path.basename(os.path.dirname(os.path.abspath(where)))
        name = parent or os.path.splitext(os.path.basename(where))[0]
    model = d.get("model")
    if not isinstance(model, dict) or model.get("type") != "WordPiece":
        raise UnsupportedTokenizerError(where, "model.type", model.get("type") if isinstance(model, dict) else None,
                                        "this loader reads WordPiece models")
    known = {"type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"}
    extra = sorted(set(model) - known)
    if extra:
        raise UnsupportedTokenizerError(where, f"model.{extra[0]}", model[extra[0]])
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab:
        raise TokenizerFileError(f"{where}: model.vocab must be a non-empty object of token -> integer id")
    check_vocab_ids(vocab, where)
    if len(set(vocab.values())) != len(vocab):
        raise TokenizerFileError(f"{where}: two vocabulary tokens share an id")
    if "" in vocab:
        raise TokenizerFileError(f"{where}: the vocabulary has an empty token")
    unk = model.get("unk_token", "[UNK]")
    if not isinstance(unk, str) or unk not in vocab:
        raise TokenizerFileError(f"{where}: model.unk_token {shown(unk)} is not in the vocabulary "
                                 "(tokenizers fails on the first unknown word)")
    prefix = model.get("continuing_subword_prefix", "##")
    if not isinstance(prefix, str):
        raise TokenizerFileError(f"{where}: model.continuing_subword_prefix must be a string, got {shown(prefix)}")
    max_chars = _count(model.get("max_input_chars_per_word", 100), where, "model.max_input_chars_per_word", 0,
                       MAX_WORD_CHARS)

    added = read_added_tokens(d, vocab, config, where)
    normalizer = _normalizer(d.get("normalizer"), where)
    if normalizer is not None and any(t.normalized for t in added):
        t = next(t for t in added if t.normalized)
        raise UnsupportedTokenizerError(where, "added_tokens[].normalized", True,
                                        f"added token {t.content!r} is matched after the normalizer")
    n_ids = max([*vocab.values(), *(t.id for t in added)]) + 1
    id_to_token = [None] * n_ids
    for s, i in vocab.items():
        id_to_token[i] = s
    for t in added:
        id_to_token[t.id] = t.content
    known_ids = {i for i, s in enumerate(id_to_token) if s is not None}
    return WordPieceModel(
        source=where + (f" + {os.fspath(config)}" if config is not None else ""),
        name=name, vocab=vocab, unk_id=vocab[unk], prefix=prefix, max_chars=max_chars, normalizer=normalizer,
        pre_mode=_pre_tokenizer(d.get("pre_tokenizer"), where), added=added,
        template=read_template(d.get("post_processor"), known_ids, where),
        decoder=_decoder(d.get("decoder"), where), truncation=read_truncation(d.get("truncation"), where),
        padding=read_padding(d.get("padding"), n_ids, where), id_to_token=id_to_token)
