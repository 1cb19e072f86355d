"""Hugging Face `tokenizer.json` files with a Unigram model (T5, mT5, XLM-R style) -> `UnigramModel`.

Supported subset (anything else is refused with `UnsupportedTokenizerError` naming the JSON field):

* model: `Unigram` with `vocab` ([[piece, score], ...]), `unk_id` (an index or null), `byte_fallback`.
* normalizer: null, `Precompiled` (a sentencepiece charsmap), `NFC`, `NFKC`, `Lowercase`, `Strip`,
  `Replace` (a String pattern, or a Regex run of one character such as " {2,}"), or a flat `Sequence`
  of them with NFC / NFKC only first.
* pre_tokenizer: null, `Metaspace` (`replacement`, `prepend_scheme` always / first / never, `split`),
  `WhitespaceSplit`, or a `Sequence` [WhitespaceSplit, Metaspace] (either alone in a Sequence too).
* post_processor: null, `TemplateProcessing` or `BertProcessing` (single and pair templates, type ids).
* truncation / padding: kept for `encode_batch_padded` (model.pipeline.batch_settings), as WordPiece's.
* decoder: null, `Metaspace`, `ByteFallback`, `Fuse`, `Strip`, `Replace` (a String pattern), or a
  `Sequence` of them.
* added_tokens: `special`, `lstrip`, `rstrip` (whitespace taken into the match, as XLM-R's `<mask>`);
  `normalized` true only without a normalizer; `single_word` true is refused. Ids are assigned as
  `tokenizers` assigns them (hf_json's rules).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import re
from dataclasses import dataclass, field

from ..errors import TokenizerFileError, UnsupportedTokenizerError
from ..model.pipeline.batch_settings import (Padding, Template, Truncation, read_padding, read_template,
                                             read_truncation)
from .hf_json import load_json, read_added_tokens, shown

__all__ = ["UnigramModel", "is_unigram_file", "read_unigram_json", "serde_f64"]

# normalizer steps: ("precompiled", charsmap bytes) | ("lowercase",) | ("strip", left, right)
# | ("replace", pattern, content)
# pre-tokenizer: (whitespace_split, metaspace) with metaspace None or (replacement, scheme, split)
PREPEND_SCHEMES = ("always", "first", "never")
# a Regex Replace that is a run of one literal character (XLM-R / T5 files: " {2,}" -> " ")
_RUN_RE = re.compile(r"([^.^$*+?{}\[\]\\|()])(?:\{([1-9][0-9]{0,3}),\}|\+)")


@dataclass
class UnigramModel:
    """A Unigram tokenizer.json, read and checked (see the module docstring)."""

    source: str
    name: str
    pieces: list          # piece string of each model id
    scores: list          # its score (float)
    unk_id: int | None
    byte_fallback: bool
    normalizer: tuple     # the steps, in order
    whitespace_split: bool
    metaspace: tuple | None  # (replacement, prepend_scheme, split)
    added: list = field(default_factory=list)
    strip: dict = field(default_factory=dict)  # added token content -> (lstrip, rstrip)
    template: Template | None = None
    truncation: Truncation | None = None
    padding: Padding | None = None
    decoder: tuple = ()   # the decoder steps, in order; () with decoder_null: tokens joined by spaces
    decoder_null: bool = True
    id_to_token: list = field(default_factory=list)

    @property
    def special_ids(self) -> frozenset[int]:
        return frozenset(t.id for t in self.added if t.special)


_U64 = 2**64 - 1
_I32 = 2**31 - 1
_POW10 = [float(f"1e{k}") for k in range(309)]


def serde_f64(text: str) -> float:
    """The f64 `serde_json` (without its float_roundtrip feature, as `tokenizers` builds it) reads
    from the JSON number `text`: the decimal digits that fit a u64, times or divided by one power of
    ten. It can differ from the correctly rounded value by an ulp, and Viterbi ties follow it."""
    body = text[1:] if text[:1] == "-" else text
    if "e" not in body and "E" not in body:
        # the common form: at most 19 significant digits never overflow the u64, so the value is
        # float(digits) / 10**(fraction digits), as f64_from_parts computes it
        whole, _, frac = body.partition(".")
        digits = (whole + frac).lstrip("0")
        if len(digits) <= 19 and len(frac) < len(_POW10):
            f = float(int(digits or "0")) / _POW10[len(frac)]
            return f if body is text else -f
    i, n = 0, len(text)
    positive = text[0] != "-"
    if not positive:
        i = 1
    sig, exp = 0, 0

    def overflows(d: int) -> bool:
        return sig >= _U64 // 10 and (sig > _U64 // 10 or d > _U64 % 10)

    if text[i] == "0":
        i += 1
    else:
        while i < n and text[i].isdigit():
            d = ord(text[i]) - 48
            if overflows(d):
                while i < n and text[i].isdigit():  # parse_long_integer: the rest only scales
                    exp += 1
                    i += 1
                break
            sig = sig * 10 + d
            i += 1
    if i < n and text[i] == ".":
        i += 1
        while i < n and text[i].isdigit():
            d = ord(text[i]) - 48
            if overflows(d):
                while i < n and text[i].isdigit():  # parse_decimal_overflow: further digits ignored
                    i += 1
                break
            sig = sig * 10 + d
            exp -= 1
            i += 1
    if i < n and text[i] in "eE":
        i += 1
        pos_exp = True
        if text[i] in "+-":
            pos_exp = text[i] == "+"
            i += 1
        e = 0
        while i < n and text[i].isdigit():
            d = ord(text[i]) - 48
            if e >= _I32 // 10 and (e > _I32 // 10 or d > _I32 % 10):
                if sig != 0 and pos_exp:
                    raise OverflowError(text)
                return 0.0 if positive else -0.0
            e = e * 10 + d
            i += 1
        exp = max(-2**31, min(_I32, exp + e if pos_exp else exp - e))
    f = float(sig)
    while True:
        a = abs(exp)
        if a < len(_POW10):
            if exp >= 0:
                f *= _POW10[a]
                if math.isinf(f):
                    raise OverflowError(text)
            else:
                f /= _POW10[a]
            break
        if f == 0.0:
            break
        if exp >= 0:
            raise OverflowError(text)
        f /= 1e308
        exp += 308
    return f if positive else -f


def is_unigram_file(path) -> bool:
    """Whether `path` is a tokenizer.json whose model is Unigram (False for anything unreadable)."""
    try:
        with open(os.fspath(path), "rb") as f:
            raw = f.read()
    except OSError:
        return False
    if b'"Unigram"' not in raw:
        return False
    try:
        d = load_json(path)
    except TokenizerFileError:
        return False
    return isinstance(d, dict) and isinstance(d.get("model"), dict) and d["model"].get("type") == "Unigram"


def _type(obj):
    return obj.get("type") if isinstance(obj, dict) else obj


def _str_pattern(obj: dict, where: str, fieldname: str) -> str:
    pat = obj.get("pattern")
    if not (isinstance(pat, dict) and list(pat) == ["String"] and isinstance(pat["String"], str)):
        raise UnsupportedTokenizerError(where, f"{fieldname}.pattern", pat, "a String pattern only")
    if not pat["String"]:
        raise UnsupportedTokenizerError(where, f"{fieldname}.pattern", pat, "an empty pattern")
    content = obj.get("content")
    if not isinstance(content, str):
        raise TokenizerFileError(f"{where}: {fieldname}.content must be a string, got {shown(content)}")
    return pat["String"]


def _norm_step(obj, where: str, fieldname: str) -> tuple:
    t = _type(obj)
    if t == "Precompiled":
        raw = obj.get("precompiled_charsmap")
        if not isinstance(raw, str):
            raise TokenizerFileError(f"{where}: {fieldname}.precompiled_charsmap must be a base64 string")
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise TokenizerFileError(f"{where}: {fieldname}.precompiled_charsmap is not base64") from None
        return ("precompiled", data)
    if t in ("NFC", "NFKC"):
        return (t.lower(),)
    if t == "Lowercase":
        return ("lowercase",)
    if t == "Strip":
        left, right = obj.get("strip_left"), obj.get("strip_right")  # required, as tokenizers reads them
        if not isinstance(left, bool) or not isinstance(right, bool):
            raise TokenizerFileError(f"{where}: {fieldname}.strip_left / strip_right must be true or false")
        return ("strip", left, right)
    if t == "Replace":
        pat = obj.get("pattern")
        if isinstance(pat, dict) and list(pat) == ["Regex"] and isinstance(pat["Regex"], str):
            m = _RUN_RE.fullmatch(pat["Regex"])
            if m is None:
                raise UnsupportedTokenizerError(where, f"{fieldname}.pattern", pat,
                                                "a String pattern, or a Regex that is a run of one character: "
                                                "' {2,}', 'x+'")
            if not isinstance(obj.get("content"), str):
                raise TokenizerFileError(f"{where}: {fieldname}.content must be a string")
            return ("replace_run", m.group(1), int(m.group(2)) if m.group(2) else 1, obj["content"])
        return ("replace", _str_pattern(obj, where, fieldname), obj["content"])
    raise UnsupportedTokenizerError(where, f"{fieldname}.type", t, "Unigram files: Precompiled, NFC, NFKC, Lowercase, "
                                    "Strip, Replace (String pattern), a Sequence of them, or null")


def _normalizer(obj, where: str) -> tuple:
    """The steps in order; NFC / NFKC only as the first one (it runs before the kernels)."""
    if obj is None:
        return ()
    if _type(obj) != "Sequence":
        return (_norm_step(obj, where, "normalizer"),)
    steps = obj.get("normalizers")
    if not isinstance(steps, list):
        raise TokenizerFileError(f"{where}: normalizer.normalizers must be a list")
    out = []
    for k, s in enumerate(steps):
        f = f"normalizer.normalizers[{k}]"
        step = _norm_step(s, where, f)
        if step[0] in ("nfc", "nfkc") and out:
            raise UnsupportedTokenizerError(where, f"{f}.type", _type(s), "NFC / NFKC only as the first step")
        out.append(step)
    return tuple(out)


def _metaspace(obj: dict, where: str, fieldname: str) -> tuple:
    rep = obj.get("replacement")
    if not isinstance(rep, str) or len(rep) != 1:
        raise TokenizerFileError(f"{where}: {fieldname}.replacement must be one character, got {shown(rep)}")
    scheme = obj.get("prepend_scheme", "always")
    if scheme not in PREPEND_SCHEMES:
        raise UnsupportedTokenizerError(where, f"{fieldname}.prepend_scheme", scheme)
    aps = obj.get("add_prefix_space")
    if aps is False:
        if scheme != "never":
            raise TokenizerFileError(f"{where}: {fieldname}.add_prefix_space does not match declared prepend_scheme")
    elif aps is not None and aps is not True:
        raise TokenizerFileError(f"{where}: {fieldname}.add_prefix_space must be true, false or null")
    split = obj.get("split", True)
    if split is None:
        split = True
    if not isinstance(split, bool):
        raise TokenizerFileError(f"{where}: {fieldname}.split must be true or false")
    return (rep, scheme, split)


def _pre_tokenizer(obj, where: str) -> tuple[bool, tuple | None]:
    if obj is None:
        return False, None
    steps = [(obj, "pre_tokenizer")]
    if _type(obj) == "Sequence":
        seq = obj.get("pretokenizers")
        if not isinstance(seq, list):
            raise TokenizerFileError(f"{where}: pre_tokenizer.pretokenizers must be a list")
        steps = [(s, f"pre_tokenizer.pretokenizers[{k}]") for k, s in enumerate(seq)]
    ws, meta = False, None
    for k, (s, f) in enumerate(steps):
        t = _type(s)
        if t == "WhitespaceSplit" and not ws and meta is None:
            ws = True
        elif t == "Metaspace" and meta is None:
            meta = _metaspace(s, where, f)
        else:
            raise UnsupportedTokenizerError(where, f"{f}.type", t, "Unigram files: Metaspace, WhitespaceSplit, "
                                            "or a Sequence [WhitespaceSplit, Metaspace]")
    return ws, meta


def _count(v, where: str, fieldname: str, least: int = 0, most: int | None = None) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < least or (most is not None and v > most):
        raise TokenizerFileError(f"{where}: {fieldname} must be an integer in {least}..{most or ''}, got {shown(v)}")
    return v


def _decoder_step(obj, where: str, fieldname: str) -> tuple:
    t = _type(obj)
    if t == "Metaspace":
        return ("metaspace",) + _metaspace(obj, where, fieldname)[:2]
    if t in ("ByteFallback", "Fuse"):
        return (t.lower(),)
    if t == "Strip":
        content = obj.get("content")
        if not isinstance(content, str) or len(content) != 1:
            raise TokenizerFileError(f"{where}: {fieldname}.content must be one character, got {shown(content)}")
        return ("strip", content, _count(obj.get("start"), where, f"{fieldname}.start", 0, 2**32),
                _count(obj.get("stop"), where, f"{fieldname}.stop", 0, 2**32))
    if t == "Replace":
        return ("replace", _str_pattern(obj, where, fieldname), obj["content"])
    raise UnsupportedTokenizerError(where, f"{fieldname}.type", t, "Unigram files: Metaspace, ByteFallback, Fuse, "
                                    "Strip, Replace (String pattern), a Sequence of them, or null")


def _decoder(obj, where: str) -> tuple:
    if _type(obj) == "Sequence":
        steps = obj.get("decoders")
        if not isinstance(steps, list):
            raise TokenizerFileError(f"{where}: decoder.decoders must be a list")
        out = []
        for k, s in enumerate(steps):
            if _type(s) == "Sequence":
                out.extend(_decoder(s, where))
            else:
                out.append(_decoder_step(s, where, f"decoder.decoders[{k}]"))
        return tuple(out)
    return (_decoder_step(obj, where, "decoder"),)


def read_unigram_json(path, config=None, *, name: str | None = None) -> UnigramModel:
    """Read a Unigram tokenizer.json (and optionally its tokenizer_config.json's added tokens)."""
    where = os.fspath(path)
    d = load_json(path)
    if not isinstance(d, dict):
        raise TokenizerFileError(f"{where}: the top level must be a JSON object")
    if name is None:
        parent = os.path.basename(os.path.dirname(os.path.abspath(where)))
        name = parent or os.path.splitext(os.path.basename(where))[0]
    model = d.get("model")
    if not isinstance(model, dict) or model.get("type") != "Unigram":
        raise UnsupportedTokenizerError(where, "model.type", model.get("type") if isinstance(model, dict) else None,
                                        "this loader reads Unigram models")
    known = {"type", "unk_id", "vocab", "byte_fallback"}
    extra = sorted(set(model) - known)
    if extra:
        raise UnsupportedTokenizerError(where, f"model.{extra[0]}", model[extra[0]])
    vocab = model.get("vocab")
    if not isinstance(vocab, list) or not vocab:
        raise TokenizerFileError(f"{where}: model.vocab must be a non-empty list of [piece, score]")
    if len(vocab) >= 2**31 - 1:
        raise TokenizerFileError(f"{where}: model.vocab has too many pieces")
    # the scores again, as tokenizers reads them (see serde_f64)
    try:
        with open(where, "rb") as f:
            vocab = json.loads(f.read().decode("utf-8"), parse_float=serde_f64)["model"]["vocab"]
    except OverflowError as e:
        raise TokenizerFileError(f"{where}: model.vocab has a score out of range: {e}") from None
    pieces, scores = [], []
    for k, e in enumerate(vocab):
        if not (isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)
                and isinstance(e[1], (int, float)) and not isinstance(e[1], bool)):
            raise TokenizerFileError(f"{where}: model.vocab[{k}] must be [piece, score], got {shown(e)}")
        try:
            s = float(e[1]) if isinstance(e[1], float) or abs(e[1]) < 2**63 else serde_f64(str(e[1]))
        except OverflowError:
            raise TokenizerFileError(f"{where}: model.vocab[{k}] has a score out of range") from None
        if not math.isfinite(s):
            raise TokenizerFileError(f"{where}: model.vocab[{k}] has a score that is not finite")
        pieces.append(e[0])
        scores.append(s)
    unk_id = model.get("unk_id")
    if unk_id is not None:
        unk_id = _count(unk_id, where, "model.unk_id", 0, len(pieces) - 1)
    byte_fallback = model.get("byte_fallback", False)
    if not isinstance(byte_fallback, bool):
        raise TokenizerFileError(f"{where}: model.byte_fallback must be true or false")
    # a piece listed twice resolves to its last id, as tokenizers' token -> id map does
    vocab_str = {p: i for i, p in enumerate(pieces)}
    # lstrip / rstrip (XLM-R's <mask>) are kept here; hf_json reads the rest of each entry
    strip: dict[str, tuple[bool, bool]] = {}
    at = d.get("added_tokens")
    if isinstance(at, list):
        plain = []
        for k, x in enumerate(at):
            if isinstance(x, dict) and (x.get("lstrip") or x.get("rstrip")):
                for flag in ("lstrip", "rstrip"):
                    if not isinstance(x.get(flag, False), bool):
                        raise TokenizerFileError(f"{where}: added_tokens[{k}].{flag} must be true or false")
                if isinstance(x.get("content"), str):
                    strip[x["content"]] = (x.get("lstrip", False), x.get("rstrip", False))
                x = {**x, "lstrip": False, "rstrip": False}
            plain.append(x)
        d = {**d, "added_tokens": plain}
    added = read_added_tokens(d, vocab_str, config, where)
    if strip:
        for t in added:
            if t.content[:1].isspace() or t.content[:1] in "\x85\xa0":
                # an rstrip region could hold the start of the next match (tokenizers then overlaps them)
                raise UnsupportedTokenizerError(where, "added_tokens[].content", t.content,
                                                "a token starting with whitespace beside lstrip / rstrip tokens")
    normalizer = _normalizer(d.get("normalizer"), where)
    if normalizer and any(t.normalized for t in added):
        t = next(t for t in added if t.normalized)
        raise UnsupportedTokenizerError(where, "added_tokens[].normalized", True,
                                        f"added token {t.content!r} is matched after the normalizer")
    n_ids = max([len(pieces) - 1, *(t.id for t in added)]) + 1
    if n_ids > len(pieces) + len(added) + 1024:
        raise TokenizerFileError(f"{where}: added token ids leave too many ids unused")
    id_to_token: list = list(pieces) + [None] * (n_ids - len(pieces))
    for t in added:
        id_to_token[t.id] = t.content
    known_ids = {i for i, s in enumerate(id_to_token) if s is not None}
    ws, meta = _pre_tokenizer(d.get("pre_tokenizer"), where)
    dec = d.get("decoder")
    return UnigramModel(
        source=where + (f" + {os.fspath(config)}" if config is not None else ""), name=name, pieces=pieces,
        scores=scores, unk_id=unk_id, byte_fallback=byte_fallback, normalizer=normalizer, whitespace_split=ws,
        metaspace=meta, added=added, strip=strip, template=read_template(d.get("post_processor"), known_ids, where),
        truncation=read_truncation(d.get("truncation"), where), padding=read_padding(d.get("padding"), n_ids, where),
        decoder=() if dec is None else _decoder(dec, where), decoder_null=dec is None, id_to_token=id_to_token)
