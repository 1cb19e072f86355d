r"""Hugging Face `tokenizer.json` -> ModelDescription, plus the text pipeline around the kernels.

    enc = tltok_jit.from_file("tokenizer.json", config="tokenizer_config.json")   # config optional

Supported subset (anything else is refused at load with `UnsupportedTokenizerError`, which names
the JSON field and its value, so a file that loads is a file encoded exactly):

* model: `BPE` (type may be absent when `merges` is present); `dropout` null/0, empty
  `continuing_subword_prefix` / `end_of_word_suffix`, `ignore_merges`, `byte_fallback`,
  `unk_token`, `fuse_unk`. Merges as `"a b"` strings or `["a", "b"]` pairs; a merge whose parts or
  result are not tokens is a format error naming the merge. A repeated merge takes the rank of its
  LAST occurrence, as `tokenizers` does (it collects the merges into a hash map).
* byte-level models (a `ByteLevel` pre-tokenizer step): vocabulary strings are GPT-2's byte
  alphabet and are decoded to bytes. Single bytes missing from the vocabulary (SmolLM2 lacks 21)
  are dropped from their piece, as HF does without `unk_token`.
  Character-level models (no ByteLevel step, e.g. Mistral-7B): initial symbols are characters,
  with `byte_fallback` to `<0xNN>` tokens.
* pre_tokenizer: null, `ByteLevel` (add_prefix_space false), `Split` (Regex/String pattern, any
  behavior, invert), `Digits`, `Metaspace` (character-level models), and a `Sequence`. Known
  combinations run on hand-written scanners (GPT-2, SmolLM2, Llama-3, Qwen2, Tekken); any other one
  runs through a Python pretokenizer built on the `regex` module, with a warning naming the pattern.
  That pretokenizer reproduces `tokenizers`' Split exactly: Oniguruma's find_iter (an empty match
  right where the previous match ended is skipped, other empty matches split), the
  SplitDelimiterBehavior folds, and Oniguruma syntax translated (`onig_to_python`: `^`/`$` are line
  anchors, `(?m)` is dot-all, `\Z`, `\z`, `\h`, `\x{..}`); patterns it cannot translate
  (nested classes, `&&`, other group options) are refused. Known residual differences: `\w` and
  the POSIX brackets (`[[:punct:]]`...) of Oniguruma differ from `regex`'s on some code points
  (e.g. onig's `\w` holds U+00B2, U+00B3, U+00B9, U+00BC-U+00BE; its `[[:punct:]]` holds the
  circled letters U+24B6...), so patterns using them are exact only away from those characters.
* normalizer: null, `NFC` (Unicode 9.0 as in `tokenizers`, see `hf_nfc`), `Prepend`, `Replace`
  (String pattern), `Sequence`. Normalization is applied between added tokens, as HF does.
* added_tokens: `special`, `normalized`; `lstrip` / `rstrip` / `single_word` true are refused
  (no supported file uses them). Their ids are assigned the way `tokenizers` assigns them, which
  ignores the ids written in the file (see `_AddedVocab`); a `TokenizerConfigWarning` names every
  token whose written id differs.
* post_processor: null, `ByteLevel` (adds nothing), `TemplateProcessing` (single sequence),
  `Sequence`; used by `encode(..., add_special_tokens=True)`.
* decoder: `ByteLevel` (fast byte gather), or a Python chain of `Replace` (String), `ByteFallback`,
  `Fuse`, `Strip`, `Metaspace`, `ByteLevel`, `Sequence`; null (tokens joined by spaces, as HF). The
  chain runs in `tltok_jit.decoder_chain`, for `decode` and for every streaming decoder alike.
* `truncation` / `padding` must be null.

Unicode versions (measured with tokenizers 0.23.3; tests in tests/test_hf_json.py):

* Split regexes run on Oniguruma (the `onig` crate 6.5.3), whose Unicode data is 16.0: over all
  1,112,064 code points its `\s` (White_Space), `\p{L}`, `\p{Lu}` ... `\p{Lo}`, `\p{N}` and
  `\p{M}` equal the shipped Unicode 16.0 class table (generated from unicodedata2 16.0.0), so the
  scanners use it unchanged; it knows the scripts added in 16.0 (Garay, Todhri) and not those of
  17.0 (Sidetic, Tolong_Siki), and the letters added in 17.0 (U+A7CE, U+088F, ...) are not letters
  there (`test_onig_classes_are_our_unicode_16_table`, `test_onig_unicode_version_is_16`).
* the `Digits` pre-tokenizer uses Rust's `char::is_numeric` (Unicode 17.0 in the Rust that built
  0.23.3): 13 code points more than 16.0's \p{N} (`tables.RUST_NUMERIC_EXTRA`).
* the NFC normalizer has Unicode 9.0 tables (`hf_nfc`).
* the `regex` module of the Python pretokenizer may be newer (regex 2026.5.9: Unicode 17.0, 4,700
  code points classed differently from 16.0, all unassigned in 16.0 but one, U+0295, Ll in 16.0
  and Lo in 17.0); before a Python split those code points are replaced by stand-ins of their
  Unicode 16 class (`_unicode16_text`), so the split sees Unicode 16 classes.

tokenizer_config.json (the "added-token trap"): `added_tokens_decoder` entries missing from the
tokenizer.json are added in declared-id order with the id `tokenizers` would assign (the next free
one), and a `TokenizerConfigWarning` names every token whose id differs from the declared one.
"""

from __future__ import annotations

import functools
import json
import os
import unicodedata
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..decoder_chain import DecoderChain
from ..errors import TokenizerFileError, UnsupportedTokenizerError
from ..model import AddedToken, ModelDescription
from ..pipeline.decoders import Decoder, read_decoders
from ..pipeline.normalizers import NFC, NFC_POST9_RANGES, Normalizer, hf_nfc, normalize, read_normalizers  # noqa: F401
from ..pipeline.onig import compile_onig, onig_find_iter, onig_to_python  # noqa: F401  (re-exported)
from ..pipeline.post_processors import read_post_processors, template_ids
from ..pipeline.pre_tokenizers import ByteLevel, Digits, Metaspace, PreTokenizer, pre_tokenize, read_pre_tokenizers
from ..pipeline.pre_tokenizers import metaspace_split as _metaspace, split_pieces as _split_behavior  # noqa: F401
from ..unicode.regex16 import CLASS_PROPS as _CLASS_PROPS, unicode16_text as _unicode16_text  # noqa: F401
from .byte_alphabet import BYTE_TO_CHAR, CHAR_TO_BYTE, beta_decode, bytes_to_unicode  # noqa: F401  (re-exported)

__all__ = [
    "HFPipeline",
    "TokenizerConfigWarning",
    "SlowPretokenizerWarning",
    "UnsupportedTokenizerError",
    "bytes_to_unicode",
    "hf_nfc",
    "read_hf_json",
]


class TokenizerConfigWarning(UserWarning):
    """tokenizer_config.json declares an added token at an id it does not get."""


class SlowPretokenizerWarning(UserWarning):
    """No hand-written scanner implements this pre-tokenizer: it runs in Python (exact, slow)."""


# ------------------------------------------------------------------------------------------------
# The pipeline description (plain data) a loader attaches to the ModelDescription
# ------------------------------------------------------------------------------------------------

@dataclass
class HFPipeline:
    """What `tokenizers` does around the BPE model, as `pipeline` stage objects.

    normalizers:  `pipeline.normalizers` stages, applied in order to the text between added tokens
                  (never to the added tokens themselves).
    pre_steps:    `pipeline.pre_tokenizers` stages run in Python when no scanner implements the
                  pre-tokenizer, else None.
    prefix_ids / suffix_ids: what `add_special_tokens=True` puts around a single sequence.
    decoder:      None = byte gather (ByteLevel); else the `pipeline.decoders` stages of the chain.
    token_strings: id -> token string (for Python decoders); None when unused.
    special_ids:  added tokens with special=True (skipped by decode(skip_special_tokens=True)).
    missing_bytes: single bytes absent from a byte-level vocabulary (dropped, as HF does).
    fallback_ids / unk_id / fuse_unk: character-level (SentencePiece-style) BPE.
    """

    normalizers: tuple[Normalizer, ...] = ()
    pre_steps: tuple[PreTokenizer, ...] | None = None
    prefix_ids: tuple[int, ...] = ()
    suffix_ids: tuple[int, ...] = ()
    decoder: tuple[Decoder, ...] | None = None
    token_strings: list | None = None
    special_ids: frozenset = frozenset()
    missing_bytes: bytes = b""
    char_level: bool = False
    fallback_ids: np.ndarray | None = None
    unk_id: int = -1
    fuse_unk: bool = False
    description: dict = field(default_factory=dict)

    def runtime(self, enc):
        return HFRuntime(enc, self)

    @functools.cached_property
    def chain(self) -> DecoderChain | None:
        """The decoder chain every decode path runs (None: the kernels' byte gather)."""
        return None if self.decoder is None else DecoderChain(self.decoder, self.token_strings)


# ------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------

def _load_json(path) -> object:
    p = os.fspath(path)
    with open(p, "rb") as f:  # FileNotFoundError / OSError propagate with the path
        raw = f.read()
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise TokenizerFileError(f"{p}: not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise TokenizerFileError(f"{p}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None


def _added_token(d, where, fname) -> AddedToken:
    if not isinstance(d, dict) or not isinstance(d.get("content"), str) or not isinstance(d.get("id"), int):
        raise TokenizerFileError(f"{where}: {fname} needs an integer id and a string content, got {d!r}")
    for flag in ("single_word", "lstrip", "rstrip"):
        if d.get(flag, False):
            raise UnsupportedTokenizerError(where, f"{fname}.{flag}", d.get(flag),
                                            f"added token {d['content']!r} (id {d['id']})")
    if not d["content"]:
        raise TokenizerFileError(f"{where}: {fname} has an empty content")
    return AddedToken(d["content"], d["id"], special=bool(d.get("special", False)),
                      normalized=bool(d.get("normalized", False)))


def _merge_pairs(merges, where) -> list[tuple[str, str]]:
    if merges and len({isinstance(m, str) for m in merges}) > 1:
        raise TokenizerFileError(f"{where}: model.merges mixes \"a b\" strings and [\"a\", \"b\"] pairs "
                                 "(tokenizers rejects such a file)")
    out = []
    for r, m in enumerate(merges):
        if isinstance(m, str):
            parts = m.split(" ")
            if len(parts) != 2:
                raise TokenizerFileError(f"{where}: merge {r} {m!r} is not two tokens separated by one space")
            out.append((parts[0], parts[1]))
        elif isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m):
            out.append((m[0], m[1]))
        else:
            raise TokenizerFileError(f"{where}: merge {r} {m!r} is neither \"a b\" nor [\"a\", \"b\"]")
    return out


def _check_merges(pairs: list[tuple[str, str]], vocab_str: dict[str, int], where) -> list[tuple[str, str]]:
    """Every merge's parts and result must be tokens; a repeated merge keeps its LAST rank (HF)."""
    for r, (a, b) in enumerate(pairs):
        for part, what in ((a, "left part"), (b, "right part"), (a + b, "result")):
            if part not in vocab_str:
                raise TokenizerFileError(
                    f"{where}: merge {r} ({a!r} {b!r}): its {what} {part!r} is not in the vocabulary")
    last: dict[tuple[str, str], int] = {}
    for r, p in enumerate(pairs):
        last[p] = r
    if len(last) == len(pairs):
        return pairs
    return [p for r, p in enumerate(pairs) if last[p] == r]


class _AddedVocab:
    """tokenizers' AddedVocabulary id assignment, which IGNORES the ids written in the file: a token
    whose content is a vocabulary token gets that id; an already added content keeps its id; a new
    one gets max(added ids) + 1 when that maximum already reaches the model's vocabulary size, else
    the vocabulary size. (Checked: drop one added token from Qwen2.5's file and every later one
    shifts down by one in `tokenizers`.)"""

    def __init__(self, vocab_str: dict[str, int]):
        self.vocab = vocab_str
        self.size = len(vocab_str)
        self.ids: dict[str, int] = {}
        self.max_id: int | None = None

    def add(self, content: str) -> int:
        i = self.ids.get(content)
        if i is None:
            i = self.vocab.get(content)
        if i is None:
            if self.max_id is None:
                i = self.size
            else:
                i = self.max_id + 1 if (self.max_id >= self.size or self.size == 0) else self.size
        self.ids[content] = i
        self.max_id = i if self.max_id is None else max(self.max_id, i)
        return i


def _assign_ids(tokens: list[AddedToken], av: _AddedVocab, where: str, declared_in: str) -> list[AddedToken]:
    out: dict[str, AddedToken] = {}
    for t in tokens:
        new_id = av.add(t.content)
        if new_id != t.id:
            warnings.warn(f"{where}: added token {t.content!r} is declared with id {t.id} {declared_in} but lands "
                          f"on id {new_id} (tokenizers assigns added-token ids in order); using {new_id}",
                          TokenizerConfigWarning, stacklevel=4)
        out[t.content] = AddedToken(t.content, new_id, special=t.special, normalized=t.normalized)
    return list(out.values())


def _config_added(config_path, tokens: list[AddedToken], av: _AddedVocab) -> list[AddedToken]:
    """The tokenizer_config.json added-token merge (see the module docstring)."""
    where_cfg = os.fspath(config_path)
    cfg = _load_json(config_path)
    if not isinstance(cfg, dict):
        raise TokenizerFileError(f"{where_cfg}: the top level must be an object")
    decl = cfg.get("added_tokens_decoder")
    if decl is None:
        return tokens
    if not isinstance(decl, dict):
        raise TokenizerFileError(f"{where_cfg}: added_tokens_decoder must be an object")
    entries = []
    for k, v in decl.items():
        try:
            i = int(k)
        except ValueError:
            raise TokenizerFileError(f"{where_cfg}: added_tokens_decoder key {k!r} is not an id") from None
        if not isinstance(v, dict):
            raise TokenizerFileError(f"{where_cfg}: added_tokens_decoder[{k!r}] must be an object")
        entries.append(_added_token({**v, "id": i}, where_cfg, f"added_tokens_decoder[{k!r}]"))
    entries.sort(key=lambda t: t.id)
    have = {t.content: t for t in tokens}
    new = []
    for t in entries:
        h = have.get(t.content)
        if h is not None:
            if h.id != t.id:
                warnings.warn(f"{where_cfg}: added token {t.content!r} is declared with id {t.id} but the "
                              f"tokenizer.json gives it id {h.id}; using {h.id}", TokenizerConfigWarning, stacklevel=4)
            continue
        new.append(t)
    # missing entries are added in declared-id order, as transformers adds them to the backend
    return list(tokens) + _assign_ids(new, av, where_cfg, "in added_tokens_decoder")


def _scanner_kind(steps: list[PreTokenizer]) -> tuple[str | None, str]:
    """(pattern kind or None, the split pattern text) of byte-level pre-tokenizer steps (ByteLevel last)."""
    from ..patterns import GPT2_ORIGINAL_PATTERN, kind_of_pattern

    *head, last = steps
    assert isinstance(last, ByteLevel)
    if last.use_regex:  # ByteLevel(use_regex=true): GPT-2's original regex after the other steps
        if not head:
            return "gpt2", GPT2_ORIGINAL_PATTERN
        if head == [Digits(individual=True)]:
            return "gpt2_digits", GPT2_ORIGINAL_PATTERN
        return None, GPT2_ORIGINAL_PATTERN
    if not head:
        return "whole", ""
    if len(head) == 1 and head[0].isolated_pattern is not None:
        kind = kind_of_pattern(head[0].isolated_pattern)
        if kind in ("llama3", "qwen2", "tekken", "gpt2"):
            return kind, head[0].isolated_pattern
        return None, head[0].isolated_pattern
    return None, " + ".join(s.label for s in head)


def read_hf_json(path: str | os.PathLike, config: str | os.PathLike | None = None, *,
                 name: str | None = None) -> ModelDescription:
    """Read a tokenizer.json (and optionally its tokenizer_config.json) into a ModelDescription."""
    where = os.fspath(path)
    d = _load_json(path)
    if not isinstance(d, dict):
        raise TokenizerFileError(f"{where}: the top level must be a JSON object")
    if name is None:
        parent = os.path.basename(os.path.dirname(os.path.abspath(where)))
        name = parent or os.path.splitext(os.path.basename(where))[0]
    for key in ("truncation", "padding"):
        if d.get(key) is not None:
            raise UnsupportedTokenizerError(where, key, d[key], "must be null")
    model = d.get("model")
    if not isinstance(model, dict):
        raise TokenizerFileError(f"{where}: 'model' is missing or not an object")
    mtype = model.get("type")
    if mtype is None and "merges" not in model:
        raise UnsupportedTokenizerError(where, "model.type", None, "no type and no merges")
    if mtype not in (None, "BPE"):
        raise UnsupportedTokenizerError(where, "model.type", mtype, "only BPE models")
    dropout = model.get("dropout")
    if dropout not in (None, 0, 0.0):
        raise UnsupportedTokenizerError(where, "model.dropout", dropout, "BPE dropout is random")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key) not in (None, ""):
            raise UnsupportedTokenizerError(where, f"model.{key}", model.get(key))
    vocab_str = model.get("vocab")
    if not isinstance(vocab_str, dict) or not all(isinstance(v, int) for v in vocab_str.values()):
        raise TokenizerFileError(f"{where}: model.vocab must be an object of token -> integer id")
    merges_raw = model.get("merges", [])
    if not isinstance(merges_raw, list):
        raise TokenizerFileError(f"{where}: model.merges must be a list")
    pairs = _check_merges(_merge_pairs(merges_raw, where), vocab_str, where)

    steps = read_pre_tokenizers(d.get("pre_tokenizer"), where)
    byte_level = any(isinstance(s, ByteLevel) for s in steps)
    if byte_level and any(isinstance(s, Metaspace) for s in steps):
        raise UnsupportedTokenizerError(where, "pre_tokenizer", d.get("pre_tokenizer"), "Metaspace with ByteLevel")
    if byte_level and not isinstance(steps[-1], ByteLevel):
        raise UnsupportedTokenizerError(where, "pre_tokenizer", d.get("pre_tokenizer"),
                                        "ByteLevel must be the last pre-tokenizer step")
    if sum(isinstance(s, ByteLevel) for s in steps) > 1:
        raise UnsupportedTokenizerError(where, "pre_tokenizer", d.get("pre_tokenizer"), "two ByteLevel steps")

    # vocabulary -> bytes
    if byte_level:
        vocab: dict[bytes, int] = {}
        for s, i in vocab_str.items():
            b = beta_decode(s)
            if b is None or not b:
                raise TokenizerFileError(f"{where}: vocabulary token {s!r} (id {i}) is not in GPT-2's byte alphabet")
            vocab[b] = i
        merges = [(beta_decode(a), beta_decode(b)) for a, b in pairs]
    else:
        vocab = {s.encode("utf-8"): i for s, i in vocab_str.items() if s}
        if len(vocab) != len(vocab_str):
            raise TokenizerFileError(f"{where}: the vocabulary has an empty token")
        merges = [(a.encode("utf-8"), b.encode("utf-8")) for a, b in pairs]
    if len(set(vocab.values())) != len(vocab):
        raise TokenizerFileError(f"{where}: two vocabulary tokens share an id")

    # added tokens
    at = d.get("added_tokens", [])
    if not isinstance(at, list):
        raise TokenizerFileError(f"{where}: added_tokens must be a list")
    added = [_added_token(x, where, f"added_tokens[{i}]") for i, x in enumerate(at)]
    av = _AddedVocab(vocab_str)
    added = _assign_ids(added, av, where, "in the file")
    if config is not None:
        added = _config_added(config, added, av)
    id_to_str = {i: s for s, i in vocab_str.items()}
    for t in added:
        if t.id in id_to_str and id_to_str[t.id] != t.content:
            raise TokenizerFileError(f"{where}: added token {t.content!r} has id {t.id}, which is vocabulary "
                                     f"token {id_to_str[t.id]!r}")
    normalizers = read_normalizers(d.get("normalizer"), where)
    if normalizers and any(t.normalized for t in added):
        raise UnsupportedTokenizerError(where, "added_tokens[].normalized", True,
                                        "normalized added tokens with a normalizer")
    # (without a normalizer, normalized=true matches the same text; HF's two passes then only differ
    # when a normalized and a non-normalized token overlap)
    if len({t.normalized for t in added}) > 1:
        raise UnsupportedTokenizerError(where, "added_tokens[].normalized", "mixed true and false")

    # pre-tokenizer -> scanner kind or Python steps
    pre_steps = None
    if byte_level:
        kind, pattern = _scanner_kind(steps)
        if kind is None:
            pre_steps = tuple(steps)
    else:
        if model.get("ignore_merges", False):
            raise UnsupportedTokenizerError(where, "model.ignore_merges", True, "with a character-level model")
        kind, pattern = "whole", ""
        if steps:
            pre_steps = tuple(steps)
            pattern = " + ".join(s.label for s in steps)
    if pre_steps is not None:
        kind = "whole"
    if pre_steps is not None and any(not isinstance(s, Metaspace) for s in pre_steps):
        warnings.warn(f"{where}: no hand-written scanner for the pre-tokenizer {pattern!r}; it runs in Python "
                      "with the `regex` module (exact for these steps, slow)", SlowPretokenizerWarning, stacklevel=3)

    # single bytes absent from a byte-level vocabulary
    missing = bytes(b for b in range(256) if bytes([b]) not in vocab) if byte_level else b""

    # character level: byte fallback, unknown token
    fallback_ids = None
    unk_id = -1
    if not byte_level:
        unk = model.get("unk_token")
        if unk is not None:
            if unk not in vocab_str:
                raise TokenizerFileError(f"{where}: model.unk_token {unk!r} is not in the vocabulary")
            unk_id = vocab_str[unk]
        fallback_ids = np.full(256, -1, dtype=np.int32)
        if model.get("byte_fallback", False):
            for b in range(256):
                i = vocab_str.get(f"<0x{b:02X}>")
                if i is not None:
                    fallback_ids[b] = i

    # decode bytes of added tokens (ByteLevel decoder: byte alphabet when every char is in it)
    added_bytes = None
    if byte_level:
        added_bytes = {}
        for t in added:
            b = beta_decode(t.content)
            if b is not None and b != t.content.encode("utf-8"):
                added_bytes[t.id] = b
        added_bytes = added_bytes or None

    decoder = read_decoders(d.get("decoder"), where, byte_level)
    token_strings = None
    if decoder is not None:
        n = max([*vocab_str.values(), *(t.id for t in added)]) + 1
        token_strings = [None] * n
        for s, i in vocab_str.items():
            token_strings[i] = s
        for t in added:
            token_strings[t.id] = t.content
    prefix_ids, suffix_ids = template_ids(read_post_processors(d.get("post_processor"), where))
    known_ids = set(vocab_str.values()) | {t.id for t in added}
    for i in prefix_ids + suffix_ids:
        if i not in known_ids:
            raise TokenizerFileError(f"{where}: post_processor uses id {i}, which is no token")

    pipeline = HFPipeline(
        normalizers=normalizers,
        pre_steps=pre_steps,
        prefix_ids=prefix_ids,
        suffix_ids=suffix_ids,
        decoder=decoder,
        token_strings=token_strings,
        special_ids=frozenset(t.id for t in added if t.special),
        missing_bytes=missing,
        char_level=not byte_level,
        fallback_ids=fallback_ids,
        unk_id=unk_id,
        fuse_unk=bool(model.get("fuse_unk", False)),
        description={"pre_tokenizer": steps},
    )
    return ModelDescription(
        name=name,
        vocab=vocab,
        merges=merges,
        pattern=pattern,
        added_tokens=added,
        ignore_merges=bool(model.get("ignore_merges", False)),
        pattern_kind=kind,
        source=where + (f" + {os.fspath(config)}" if config is not None else ""),
        allow_missing_bytes=bool(missing),
        char_level=not byte_level,
        added_bytes=added_bytes,
        hf=pipeline,
    )


# ------------------------------------------------------------------------------------------------
# Runtime: what the Encoding calls
# ------------------------------------------------------------------------------------------------

class HFRuntime:
    """Runs an HFPipeline around the kernels of one Encoding."""

    def __init__(self, enc, pipe: HFPipeline):
        self.enc = enc
        self.pipe = pipe
        self.missing = pipe.missing_bytes
        self.has_norm = bool(pipe.normalizers)
        # the kernel path is exact for a text when nothing below applies to it
        self.always_text_path = pipe.char_level or pipe.pre_steps is not None
        self.prefix = np.array(pipe.prefix_ids, dtype=np.uint32)
        self.suffix = np.array(pipe.suffix_ids, dtype=np.uint32)
        self.pre_steps = pipe.pre_steps
        self.nfc_only = pipe.normalizers == (NFC(),)
        self.special_ids = np.array(sorted(pipe.special_ids), dtype=np.int64)
        # whether some texts need Python around the kernels (else every path is the kernels' own)
        self.needs_python = self.always_text_path or self.has_norm or bool(self.missing)

    # -------------------------------------------------------------- tables (built on first use)
    # Lazy: while the kernels compile in the background, the Encoding answers from the Python
    # encoder (interim_hf) and must not build its tables yet.
    @functools.cached_property
    def T(self):
        return self.enc._t

    def _whole_variant(self, ignore: bool):
        """The tables with PAT_WHOLE: one row = one piece (Python-made pieces)."""
        from ..kernels.scan import PAT_WHOLE
        from ..tables import with_config

        return with_config(self.T, pattern_kind=PAT_WHOLE, ignore_merges=ignore)

    @functools.cached_property
    def T_whole(self):
        """PAT_WHOLE with the model's ignore_merges."""
        from ..tables import table_config

        return self._whole_variant(table_config(self.T).ignore_merges)

    @functools.cached_property
    def T_whole_plain(self):
        """PAT_WHOLE without ignore_merges (pieces whose dropped bytes make the whole-piece lookup moot)."""
        return self._whole_variant(False)

    # -------------------------------------------------------------- normalization
    def normalize(self, s: str) -> str:
        return normalize(self.pipe.normalizers, s)

    def text_is_plain(self, text: str, data: bytes) -> bool:
        """Whether the byte-level kernels alone encode `text` exactly (normalization changes nothing
        in it and it has no byte the vocabulary lacks)."""
        if self.always_text_path:
            return False
        if self.missing and len(data.translate(None, self.missing)) != len(data):
            return False
        if self.has_norm:
            if self.nfc_only:
                # Python-NFC-stable => tokenizers-NFC-stable (hf_nfc splits at Unicode-9 barriers, and the
                # parts of an NFC string are NFC); quick check in C, immediate for ASCII
                return unicodedata.is_normalized("NFC", text)
            n = self.normalize(text)
            if n is not text and n != text:
                return False
        return True

    # -------------------------------------------------------------- encoding
    def _run_rows_offsets(self, rows: list[bytes], T) -> tuple[np.ndarray, np.ndarray]:
        """(ids of all rows, int64 offsets of each row's ids in them)."""
        from ..kernels.encode_chars import encode_chars_rows, encode_rows_plain, pack_rows

        if not rows:
            return np.empty(0, dtype=np.uint32), np.zeros(1, dtype=np.int64)
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(rows), dtype=np.uint8)
        out = np.empty(max(len(data), 1), dtype=np.uint32)
        counts = np.empty(len(rows), dtype=np.int64)
        cache, work = self.enc._serial_state()
        if self.pipe.char_level:
            encode_chars_rows(data, offsets, T, self.pipe.fallback_ids, self.pipe.unk_id, self.pipe.fuse_unk,
                              out, counts, work[0])
        else:
            encode_rows_plain(data, offsets, T, out, counts, cache, work[0])
        dst = np.empty(int(counts.sum()), dtype=np.uint32)
        pack_rows(out, offsets, counts, dst)
        id_off = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=id_off[1:])
        return dst, id_off

    def _run_rows(self, rows: list[bytes], T) -> np.ndarray:
        return self._run_rows_offsets(rows, T)[0]

    def _char_rows(self, seg: str, at_start: bool) -> list[bytes]:
        """Character-level pipelines: the kernel rows (words) of one text between added tokens."""
        seg = self.normalize(seg)
        if not seg:
            return []
        if self.pre_steps is not None:
            return [p.encode("utf-8") for p in pre_tokenize(self.pre_steps, seg, at_start)]
        return [seg.encode("utf-8")]

    def _segment_ids(self, seg: str, at_start: bool = True) -> list[np.ndarray]:
        """Ids of one text between added tokens (normalized here); at_start: it begins the text."""
        if self.pipe.char_level:
            rows = self._char_rows(seg, at_start)
            return [self._run_rows(rows, self.T)] if rows else []
        seg = self.normalize(seg)
        if not seg:
            return []
        data = seg.encode("utf-8")
        if self.pre_steps is None and not (self.missing and len(data.translate(None, self.missing)) != len(data)):
            buf = np.frombuffer(data, dtype=np.uint8)
            return [self.enc._encode_buf(buf, self.enc._no_added, False)]
        # pieces from the Python pretokenizer, or from the scanner when bytes must be dropped
        if self.pre_steps is not None:
            pieces = [p.encode("utf-8") for p in pre_tokenize(self.pre_steps, seg)]
        else:
            from ..kernels.scan import piece_ends
            from ..tables import table_config

            buf = np.frombuffer(data, dtype=np.uint8)
            ends = piece_ends(table_config(self.T).pattern_kind, buf, 0, len(buf), self.T.stage1,
                              self.T.stage2).tolist()
            starts = [0] + ends[:-1]
            pieces = [data[a:b] for a, b in zip(starts, ends)]
        if not self.missing:
            return [self._run_rows(pieces, self.T_whole)]
        out = []
        clean: list[bytes] = []
        for p in pieces:
            q = p.translate(None, self.missing)
            if len(q) == len(p):
                clean.append(p)
                continue
            if clean:
                out.append(self._run_rows(clean, self.T_whole))
                clean = []
            if self.enc._model.ignore_merges:
                from ..kernels.hashing import token_id_of_bytes

                t = token_id_of_bytes(self.T, p)
                if t >= 0:
                    out.append(np.array([t], dtype=np.uint32))
                    continue
            if q:
                out.append(self._run_rows([q], self.T_whole_plain))
        if clean:
            out.append(self._run_rows(clean, self.T_whole))
        return out

    def encode_text_path(self, data: bytes, amask: np.ndarray, any_allowed: bool) -> np.ndarray:
        """Added tokens found in the raw text, normalization and encoding segment by segment."""
        from ..kernels.encode_chars import split_added

        buf = np.frombuffer(data, dtype=np.uint8)
        parts: list[np.ndarray] = []
        pos = 0
        if any_allowed and len(buf):
            starts, ends, idx = split_added(buf, self.T, amask)
            added_ids = self.T.added_ids
            for a, e, t in zip(starts.tolist(), ends.tolist(), idx.tolist()):
                if a > pos:
                    parts += self._segment_ids(data[pos:a].decode("utf-8"), pos == 0)
                parts.append(np.array([added_ids[t]], dtype=np.uint32))
                pos = e
        if pos < len(data):
            parts += self._segment_ids(data[pos:].decode("utf-8"), pos == 0)
        if not parts:
            return np.empty(0, dtype=np.uint32)
        return np.concatenate(parts).astype(np.uint32, copy=False)

    def encode(self, text: str, data: bytes, amask, any_allowed: bool, add_special_tokens: bool) -> np.ndarray:
        if self.text_is_plain(text, data):
            ids = self.enc._encode_buf(np.frombuffer(data, dtype=np.uint8), amask, any_allowed)
        else:
            ids = self.encode_text_path(data, amask, any_allowed)
        if add_special_tokens and (len(self.prefix) or len(self.suffix)):
            ids = np.concatenate((self.prefix, ids, self.suffix))
        return ids

    def add_template(self, ids: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows with the post-processor's prefix / suffix ids around each."""
        if not (len(self.prefix) or len(self.suffix)):
            return ids, offsets
        n = len(offsets) - 1
        o = offsets.tolist()
        parts = []
        for r in range(n):
            parts += [self.prefix, ids[o[r]:o[r + 1]], self.suffix]
        extra = len(self.prefix) + len(self.suffix)
        new_offsets = offsets + extra * np.arange(n + 1, dtype=np.int64)
        flat = np.concatenate(parts).astype(np.uint32, copy=False) if parts else np.empty(0, dtype=np.uint32)
        return flat, new_offsets - new_offsets[0]

    @staticmethod
    def _rows_with(lut: np.ndarray, arr: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """bool per row: whether the row holds a byte b with lut[b]."""
        n = len(offsets) - 1
        out = np.zeros(n, dtype=bool)
        if not n:
            return out
        a0 = int(offsets[0])
        flags = lut[arr[a0:int(offsets[-1])]]
        nonempty = np.flatnonzero(offsets[1:] > offsets[:-1])
        if len(nonempty):
            # consecutive rows cover the data contiguously: reduceat over the starts of the non-empty ones
            out[nonempty] = np.logical_or.reduceat(flags, offsets[:-1][nonempty] - a0)
        return out

    def _encode_rows_char_level(self, arr, offsets, valid, amask, any_allowed: bool):
        """Character-level batches: each text is split at its added tokens, normalized and pretokenized in
        Python, and the words of ALL texts go through one kernel call."""
        from ..kernels.encode_chars import split_added

        n = len(offsets) - 1
        raw = arr.tobytes()
        o = offsets.tolist()
        cand = None
        if any_allowed:
            cand = self._rows_with(np.asarray(self.T.trie_root) >= 0, arr, offsets)
        added_ids = self.T.added_ids
        words: list[bytes] = []
        plans: list = [None] * n  # per text: (first word, end word) or a list of word ranges / added ids
        for r in range(n):
            if not valid[r]:
                plans[r] = (len(words), len(words))
                continue
            b = raw[o[r]:o[r + 1]]
            try:
                text = b.decode("utf-8")
            except UnicodeDecodeError:  # as encode() of the replaced text
                text = b.decode("utf-8", "replace")
                b = text.encode("utf-8")
            if cand is None or not cand[r]:
                w0 = len(words)
                words += self._char_rows(text, True)
                plans[r] = (w0, len(words))
                continue
            buf = np.frombuffer(b, dtype=np.uint8)
            starts, ends, idx = split_added(buf, self.T, amask)
            plan = []
            pos = 0
            for a, e, t in zip(starts.tolist(), ends.tolist(), idx.tolist()):
                if a > pos:
                    w0 = len(words)
                    words += self._char_rows(b[pos:a].decode("utf-8"), pos == 0)
                    plan.append((w0, len(words)))
                plan.append(int(added_ids[t]))
                pos = e
            if pos < len(b):
                w0 = len(words)
                words += self._char_rows(b[pos:].decode("utf-8"), pos == 0)
                plan.append((w0, len(words)))
            plans[r] = plan
        ids, word_off = self._run_rows_offsets(words, self.T)
        wo = word_off.tolist()
        results = []
        for plan in plans:
            if isinstance(plan, tuple):
                results.append(ids[wo[plan[0]]:wo[plan[1]]])
                continue
            parts = [ids[wo[p[0]]:wo[p[1]]] if isinstance(p, tuple) else np.array([p], dtype=np.uint32)
                     for p in plan]
            results.append(np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32))
        lens = np.fromiter((len(x) for x in results), dtype=np.int64, count=n)
        new_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=new_offsets[1:])
        flat = np.concatenate(results).astype(np.uint32, copy=False) if n else np.empty(0, dtype=np.uint32)
        return flat, new_offsets

    def _suspect_rows(self, arr: np.ndarray, offsets: np.ndarray) -> np.ndarray | None:
        """bool per row: whether the row may need the Python path (a non-ASCII byte where NFC is the only
        normalizer, a byte the vocabulary lacks); None when every row needs the per-row check."""
        n = len(offsets) - 1
        if self.always_text_path or (self.has_norm and not self.nfc_only):
            return None
        lut = np.zeros(256, dtype=bool)
        if self.has_norm:
            lut[0x80:] = True  # ASCII is NFC-stable
        if self.missing:
            lut[np.frombuffer(self.missing, dtype=np.uint8)] = True
        if not lut.any():
            return np.zeros(n, dtype=bool)
        return self._rows_with(lut, arr, offsets)

    def encode_rows(self, data: np.ndarray, offsets: np.ndarray, valid: np.ndarray, amask, any_allowed: bool,
                    num_threads: int) -> tuple[np.ndarray, np.ndarray]:
        """Encoding.encode_rows for pipelines that need Python: rows the kernels encode exactly go
        through them in parallel, the others one by one through the text path."""
        enc = self.enc
        n = len(offsets) - 1
        arr = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
        if self.pipe.char_level:
            return self._encode_rows_char_level(arr, offsets, valid, amask, any_allowed)
        suspect = self._suspect_rows(arr, offsets)
        if suspect is not None and not suspect[np.asarray(valid, dtype=bool)].any():
            # no row can differ from the kernels' result: no Python strings at all
            return enc.encode_rows(arr, offsets, valid, num_threads=num_threads, amask=amask,
                                   any_allowed=any_allowed, _raw=True)
        raw = arr.tobytes()
        o = offsets.tolist()
        texts = [raw[o[r]:o[r + 1]] for r in range(n)]
        results: list[np.ndarray | None] = [None] * n
        plain_rows = []
        for r in range(n):
            if not valid[r]:
                results[r] = np.empty(0, dtype=np.uint32)
                continue
            if suspect is not None and not suspect[r]:
                plain_rows.append(r)
                continue
            b = texts[r]
            try:
                t = b.decode("utf-8")
            except UnicodeDecodeError:  # as encode() of the replaced text
                t = b.decode("utf-8", "replace")
                b = texts[r] = t.encode("utf-8")
            if self.text_is_plain(t, b):
                plain_rows.append(r)
            else:
                results[r] = self.encode_text_path(b, amask, any_allowed)
        if plain_rows:
            rows = [texts[r] for r in plain_rows]
            lengths = np.fromiter((len(x) for x in rows), dtype=np.int64, count=len(rows))
            po = np.zeros(len(rows) + 1, dtype=np.int64)
            np.cumsum(lengths, out=po[1:])
            pdata = np.frombuffer(b"".join(rows), dtype=np.uint8)
            ids, io = enc.encode_rows(pdata, po, num_threads=num_threads, amask=amask, any_allowed=any_allowed,
                                      _raw=True)
            io = io.tolist()
            for k, r in enumerate(plain_rows):
                results[r] = ids[io[k]:io[k + 1]]
        lens = np.fromiter((len(x) for x in results), dtype=np.int64, count=n)
        new_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=new_offsets[1:])
        flat = np.concatenate(results).astype(np.uint32, copy=False) if n else np.empty(0, dtype=np.uint32)
        return flat, new_offsets

    def encode_arrow(self, array, *, num_threads, allowed_special, disallowed_special, errors, large_list,
                     counting: bool):
        """Arrow columns for pipelines that need Python: rows read as bytes and encoded like `encode`
        of `row.decode("utf-8", errors)` (null rows stay null). Row errors (invalid UTF-8 with
        errors="strict", a disallowed special token) raise `ArrowRowError` naming the row in the
        whole input, across chunks."""
        import pyarrow as pa

        from ..arrow import ArrowRowError, as_arrow, validate_text_array

        if errors not in ("replace", "strict"):
            raise ValueError(f"errors must be 'replace' or 'strict', not {errors!r}")
        arr = as_arrow(array)
        chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
        out_chunks = []
        row_base = 0
        for chunk in chunks:
            validate_text_array(chunk)
            vals = []
            for r, b in enumerate(_row_bytes(chunk)):
                if b is None:
                    vals.append(None)
                    continue
                row = row_base + r
                try:
                    text = b.decode("utf-8")
                except UnicodeDecodeError as e:
                    if errors == "strict":
                        raise ArrowRowError(f"row {row}: invalid UTF-8 at byte {e.start} "
                                            f"({b[max(e.start - 8, 0):e.start + 8]!r}); pass errors='replace' to "
                                            f"encode it as bytes.decode('utf-8', 'replace') would", row) from None
                    text = b.decode("utf-8", "replace")
                try:
                    vals.append(self.enc.encode_to_numpy(text, allowed_special=allowed_special,
                                                         disallowed_special=disallowed_special))
                except ValueError as e:
                    raise ArrowRowError(f"row {row}: {e}", row) from None
            row_base += len(chunk)
            if counting:
                out_chunks.append(pa.array([None if v is None else len(v) for v in vals], type=pa.int64()))
            else:
                total = sum(len(v) for v in vals if v is not None)
                large = large_list if large_list is not None else total > 2**31 - 1
                typ = pa.large_list(pa.uint32()) if large else pa.list_(pa.uint32())
                out_chunks.append(pa.array(vals, type=typ))
        if isinstance(arr, pa.ChunkedArray):
            return pa.chunked_array(out_chunks, type=out_chunks[0].type if out_chunks else
                                    (pa.int64() if counting else pa.list_(pa.uint32())))
        return out_chunks[0]

    def decode_arrow(self, list_array):
        import pyarrow as pa

        from ..arrow import as_arrow

        arr = as_arrow(list_array)
        chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
        out = [pa.array([None if v is None else self.enc.decode(v) for v in c.to_pylist()], type=pa.large_string())
               for c in chunks]
        if isinstance(arr, pa.ChunkedArray):
            return pa.chunked_array(out, type=pa.large_string())
        return out[0]

    # -------------------------------------------------------------- decoding
    def filter_special(self, ids: np.ndarray) -> np.ndarray:
        if not len(self.special_ids) or not len(ids):
            return ids
        return ids[~np.isin(ids, self.special_ids)]

    def decode_python(self, ids: np.ndarray) -> str:
        """The decoder chain over token strings, as `tokenizers` runs it."""
        return self.pipe.chain.decode(ids.tolist())


_AS_BINARY = {"string": "binary", "large_string": "large_binary", "string_view": "binary_view"}


def _row_bytes(chunk) -> list:
    """The rows of a string / binary (or dictionary-encoded) Arrow array as bytes, None for a null:
    string rows are read as binary, so bytes that are not UTF-8 reach the caller instead of raising."""
    import pyarrow as pa

    if pa.types.is_dictionary(chunk.type):
        values = _row_bytes(chunk.dictionary)
        return [None if i is None else values[i] for i in chunk.indices.to_pylist()]
    binary = _AS_BINARY.get(str(chunk.type))
    if binary is not None:
        chunk = chunk.view(getattr(pa, binary)())
    return [None if v is None else bytes(v) for v in chunk.to_pylist()]
