r"""Hugging Face `tokenizer.json` -> ModelDescription, its pipeline as `tltok_jit.model.pipeline` stages.

    enc = tltok_jit.from_file("tokenizer.json", config="tokenizer_config.json")   # config optional

Supported subset (anything else is refused at load with `UnsupportedTokenizerError`, which names
the JSON field and its value, so a file that loads is a file encoded exactly). Each supported type of
normalizer, pre-tokenizer, post-processor and decoder is one class of `tltok_jit.model.pipeline`, which
reads and refuses its options; this module checks how they combine, picks a scanner, and reads the
model and its added tokens. `pipeline_runtime.HFRuntime` runs the stages around the kernels.

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
* post_processor: null, `ByteLevel` (adds nothing), `TemplateProcessing` (single and pair
  templates), `Sequence`; used by `encode(..., add_special_tokens=True)` and `encode_batch_padded`.
* decoder: `ByteLevel` (fast byte gather), or a Python chain of `Replace` (String), `ByteFallback`,
  `Fuse`, `Strip`, `Metaspace`, `ByteLevel`, `Sequence`; null (tokens joined by spaces, as HF). The
  chain runs in `tltok_jit.hf.decoder_chain`, for `decode` and for every streaming decoder alike.
* `truncation` / `padding`: kept (`model.pipeline.batch_settings`); `encode_batch_padded` applies
  them when the call gives none, as `tokenizers`' `encode_batch` does; `encode` never does.

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
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..hf.decoder_chain import DecoderChain
from ..errors import TokenizerFileError, UnsupportedTokenizerError
from ..model.description import AddedToken, ModelDescription
from ..model.pipeline.decoders import Decoder, read_decoders
from ..model.pipeline.normalizers import (NFC_POST9_RANGES, Normalizer, hf_nfc, read_normalizers)  # noqa: F401  (re-exported)
from ..model.pipeline.onig import compile_onig, onig_find_iter, onig_to_python  # noqa: F401  (re-exported)
from ..model.pipeline.batch_settings import (Padding, Template, Truncation, read_padding, read_template,
                                             read_truncation)
from ..model.pipeline.post_processors import read_post_processors, template_ids
from ..model.pipeline.pre_tokenizers import ByteLevel, Digits, Metaspace, PreTokenizer, read_pre_tokenizers
from ..model.pipeline.pre_tokenizers import metaspace_split as _metaspace, split_pieces as _split_behavior  # noqa: F401
from ..unicode.regex16 import CLASS_PROPS as _CLASS_PROPS, unicode16_text as _unicode16_text  # noqa: F401
from ..model.byte_alphabet import BYTE_TO_CHAR, CHAR_TO_BYTE, beta_decode, bytes_to_unicode  # noqa: F401  (re-exported)

__all__ = [
    "HFPipeline",
    "TokenizerConfigWarning",
    "SlowPretokenizerWarning",
    "UnsupportedTokenizerError",
    "bytes_to_unicode",
    "hf_nfc",
    "check_vocab_ids",
    "load_json",
    "read_added_tokens",
    "read_hf_json",
    "shown",
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
    template:     the post-processor's single and pair templates (None: it adds no ids).
    truncation / padding: the file's own settings (None: null), for `encode_batch_padded`.
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
    template: Template | None = None
    truncation: Truncation | None = None
    padding: Padding | None = None

    @functools.cached_property
    def chain(self) -> DecoderChain | None:
        """The decoder chain every decode path runs (None: the kernels' byte gather)."""
        return None if self.decoder is None else DecoderChain(self.decoder, self.token_strings)


# ------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate_at(node, path: str = "") -> str | None:
    """The JSON path of the first string (or object key) holding a lone surrogate, else None."""
    if isinstance(node, str):
        return path if _LONE_SURROGATE.search(node) else None
    if isinstance(node, dict):
        for k, v in node.items():
            if _LONE_SURROGATE.search(k):
                return f"{path}.{k!r}" if path else repr(k)
            found = _lone_surrogate_at(v, f"{path}.{k}" if path else k)
            if found is not None:
                return found
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found = _lone_surrogate_at(v, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def load_json(path) -> object:
    p = os.fspath(path)
    with open(p, "rb") as f:  # FileNotFoundError / OSError propagate with the path
        raw = f.read()
    try:
        d = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise TokenizerFileError(f"{p}: not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise TokenizerFileError(f"{p}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise TokenizerFileError(f"{p}: JSON nested too deeply") from None
    # A \uD800-\uDFFF escape that is not half of a pair reads as a lone surrogate, which no text
    # holds and UTF-8 cannot encode (serde_json, and so `tokenizers`, refuses the file).
    if _SURROGATE_ESCAPE.search(raw):
        at = _lone_surrogate_at(d)
        if at is not None:
            raise TokenizerFileError(f"{p}: {at or 'the top level'} holds a lone surrogate (\\uD800-\\uDFFF escape)")
    return d


def _is_id(v) -> bool:
    """A token id as `tokenizers` reads one (a u32)."""
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**32


def _added_token(d, where, fname) -> AddedToken:
    if not isinstance(d, dict) or not isinstance(d.get("content"), str) or not _is_id(d.get("id")):
        raise TokenizerFileError(f"{where}: {fname} needs a token id (an integer 0..2**32-1) and a string "
                                 f"content, got {shown(d)}")
    for flag in ("single_word", "lstrip", "rstrip"):
        if d.get(flag, False):
            raise UnsupportedTokenizerError(where, f"{fname}.{flag}", d.get(flag),
                                            f"added token {d['content']!r} (id {d['id']})")
    if not d["content"]:
        raise TokenizerFileError(f"{where}: {fname} has an empty content")
    return AddedToken(d["content"], d["id"], special=bool(d.get("special", False)),
                      normalized=bool(d.get("normalized", False)))


def shown(v, limit: int = 200) -> str:
    r = repr(v)
    return r if len(r) <= limit else r[:limit] + "..."


def check_vocab_ids(vocab_str: dict, where) -> None:
    """Ids are u32 (as `tokenizers` reads them), and the largest leaves at most as many ids unused
    as there are tokens (plus 1024): the tables are arrays indexed by id."""
    for s, i in vocab_str.items():
        if not _is_id(i):
            raise TokenizerFileError(f"{where}: model.vocab[{shown(s)}] = {shown(i)} is not a token id "
                                     "(an integer 0..2**32-1)")
    if vocab_str:
        top = max(vocab_str.values())
        bound = 2 * len(vocab_str) + 1024
        if top >= bound:
            s = next(s for s, i in vocab_str.items() if i == top)
            raise TokenizerFileError(f"{where}: model.vocab[{shown(s)}] = {top}: the {len(vocab_str)} tokens' ids "
                                     f"must be below {bound} (twice their number plus 1024)")


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
                          TokenizerConfigWarning, stacklevel=5)
        out[t.content] = AddedToken(t.content, new_id, special=t.special, normalized=t.normalized)
    return list(out.values())


def _config_added(config_path, tokens: list[AddedToken], av: _AddedVocab) -> list[AddedToken]:
    """The tokenizer_config.json added-token merge (see the module docstring)."""
    where_cfg = os.fspath(config_path)
    cfg = load_json(config_path)
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
                              f"tokenizer.json gives it id {h.id}; using {h.id}", TokenizerConfigWarning, stacklevel=5)
            continue
        new.append(t)
    # missing entries are added in declared-id order, as transformers adds them to the backend
    return list(tokens) + _assign_ids(new, av, where_cfg, "in added_tokens_decoder")


def read_added_tokens(d: dict, vocab_str: dict[str, int], config, where: str) -> list[AddedToken]:
    """The file's `added_tokens` (and the config's `added_tokens_decoder` entries it lacks) with the
    ids HF gives them; an added token may reuse a vocabulary id only for the same string."""
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
    return added


def _scanner_kind(steps: list[PreTokenizer]) -> tuple[str | None, str]:
    """(pattern kind or None, the split pattern text) of byte-level pre-tokenizer steps (ByteLevel last)."""
    from ..model.patterns import GPT2_ORIGINAL_PATTERN, kind_of_pattern

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
    d = load_json(path)
    if not isinstance(d, dict):
        raise TokenizerFileError(f"{where}: the top level must be a JSON object")
    if name is None:
        parent = os.path.basename(os.path.dirname(os.path.abspath(where)))
        name = parent or os.path.splitext(os.path.basename(where))[0]
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
    if not isinstance(vocab_str, dict):
        raise TokenizerFileError(f"{where}: model.vocab must be an object of token -> integer id")
    check_vocab_ids(vocab_str, where)
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
    added = read_added_tokens(d, vocab_str, config, where)
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
            if not isinstance(unk, str):
                raise TokenizerFileError(f"{where}: model.unk_token must be a string or null, got {shown(unk)}")
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

    n_ids = max([*vocab_str.values(), *(t.id for t in added)], default=-1) + 1
    pipeline = HFPipeline(
        template=read_template(d.get("post_processor"), known_ids, where, ("ByteLevel",)),
        truncation=read_truncation(d.get("truncation"), where),
        padding=read_padding(d.get("padding"), n_ids, where),
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
