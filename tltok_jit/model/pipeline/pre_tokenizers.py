"""tokenizer.json pre-tokenizers: `ByteLevel`, `Split`, `Digits`, `Metaspace`, in a `Sequence`.

These are the Python forms of the steps, run when no hand-written scanner implements the
pre-tokenizer (`loaders.hf_json` picks a scanner for the known combinations). `Split` reproduces
`tokenizers` exactly: Oniguruma's find_iter (`onig.onig_find_iter`), the SplitDelimiterBehavior
folds, and Unicode 16 classes for the `regex` module (`unicode16_text`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ...errors import UnsupportedTokenizerError
from ..patterns import GPT2_ORIGINAL_PATTERN
from ...unicode import CLS_NUMBER, RUST_NUMERIC_EXTRA, char_class
from ...unicode.regex16 import unicode16_text
from .fields import metaspace_fields, read_stages
from .onig import compile_onig, onig_find_iter

__all__ = ["ByteLevel", "Digits", "Metaspace", "PRE_TOKENIZERS", "PreTokenizer", "Split",
           "apply_behavior", "metaspace_split", "pre_tokenize", "read_pre_tokenizers", "split_pieces"]


BEHAVIORS = ("Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous")


def apply_behavior(segs: list[tuple[str, bool]], behavior: str) -> list[str]:
    """tokenizers' SplitDelimiterBehavior over (text, is_match) pieces, with its exact folds."""
    if behavior == "Isolated":
        return [t for t, _ in segs]
    if behavior == "Removed":
        return [t for t, m in segs if not m]
    out: list[str] = []
    prev = False
    if behavior == "MergedWithPrevious":  # a match joins the piece before it unless that was a match
        for t, m in segs:
            if m and not prev and out:
                out[-1] += t
            else:
                out.append(t)
            prev = m
        return out
    if behavior == "MergedWithNext":  # folded from the right: a match joins the piece after it
        for t, m in reversed(segs):
            if m and not prev and out:
                out[-1] = t + out[-1]
            else:
                out.append(t)
            prev = m
        return out[::-1]
    if behavior == "Contiguous":  # consecutive pieces of the same kind are one
        for t, m in segs:
            if m == prev and out:
                out[-1] += t
            else:
                out.append(t)
            prev = m
        return out
    raise ValueError(behavior)


def split_pieces(pieces: list[str], compiled, behavior: str, invert: bool = False,
                 first_at_start: bool = False) -> tuple[list[str], bool]:
    """tokenizers' Split pre-tokenizer on each piece: the matches (empty ones included) and the text
    between them (`invert`: the other way round), folded by the behavior; empty pieces dropped.
    Returns the pieces and whether the first one begins at offset 0 of the text (given whether
    pieces[0] did)."""
    out: list[str] = []
    for k, p in enumerate(pieces):
        if not p:
            continue
        q = unicode16_text(p)  # same length: the match positions hold for p
        pos = 0
        segs: list[tuple[str, bool]] = []
        for a, e in onig_find_iter(compiled, q):
            if a > pos:
                segs.append((p[pos:a], invert))
            segs.append((p[a:e], not invert))
            pos = e
        if pos < len(p):
            segs.append((p[pos:], invert))
        if not out:
            # the output pieces cover the input contiguously, except Removed's dropped matches
            first_at_start = first_at_start and k == 0
            if first_at_start and behavior == "Removed":
                lead = next((i for i, (t, m) in enumerate(segs) if t and not m), len(segs))
                first_at_start = not any(t for t, m in segs[:lead] if m)
        out += [t for t in apply_behavior(segs, behavior) if t]
    return out, first_at_start and bool(out)


def metaspace_split(pieces: list[str], rep: str, scheme: str, split: bool, at_start: bool) -> list[str]:
    """tokenizers' Metaspace pre-tokenizer: spaces -> `rep`, `rep` prepended unless the piece starts
    with it (scheme "always"; "first": only the piece at offset 0 of the original text), then split
    before every `rep` (MergedWithNext)."""
    out: list[str] = []
    for k, p in enumerate(pieces):
        if not p:
            continue
        p = p.replace(" ", rep)
        if not p.startswith(rep) and (scheme == "always" or (scheme == "first" and at_start and k == 0)):
            p = rep + p
        if not split:
            out.append(p)
            continue
        segs: list[tuple[str, bool]] = []
        pos = 0
        while True:
            j = p.find(rep, pos)
            if j < 0:
                break
            if j > pos:
                segs.append((p[pos:j], False))
            segs.append((rep, True))
            pos = j + len(rep)
        if pos < len(p):
            segs.append((p[pos:], False))
        out += apply_behavior(segs, "MergedWithNext")
    return out


def is_numeric(ch: str) -> bool:
    """Rust's `char::is_numeric`, which the `Digits` pre-tokenizer splits on."""
    return char_class(ch) == CLS_NUMBER or ord(ch) in RUST_NUMERIC_EXTRA


class PreTokenizer:
    """One pre-tokenizer stage: `pre_tokenize(pieces, first_at_start) -> (pieces, first_at_start)`,
    where first_at_start tells whether pieces[0] begins at offset 0 of the text (Metaspace "first")."""

    @property
    def label(self) -> str:
        """How the stage is named in a model's pattern text and in warnings."""
        raise NotImplementedError

    @property
    def isolated_pattern(self) -> str | None:
        """The pattern of a plain split (every match and every gap a piece), else None: what a
        hand-written scanner may implement."""
        return None

    def pre_tokenize(self, pieces: list[str], first_at_start: bool) -> tuple[list[str], bool]:
        raise NotImplementedError


@dataclass(frozen=True)
class ByteLevel(PreTokenizer):
    """`ByteLevel` (add_prefix_space false): with `use_regex`, GPT-2's original split; the byte
    alphabet itself is the model's (its vocabulary is read as bytes)."""

    use_regex: bool = True

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "ByteLevel":
        if obj.get("add_prefix_space", False):
            raise UnsupportedTokenizerError(where, f"{fieldname}.add_prefix_space", obj.get("add_prefix_space"),
                                            "ByteLevel with add_prefix_space")
        return cls(bool(obj.get("use_regex", True)))

    @property
    def label(self) -> str:
        return "bytelevel"

    @functools.cached_property
    def _compiled(self):
        return compile_onig(GPT2_ORIGINAL_PATTERN)

    def pre_tokenize(self, pieces: list[str], first_at_start: bool) -> tuple[list[str], bool]:
        if not self.use_regex:
            return pieces, first_at_start
        return split_pieces(pieces, self._compiled, "Isolated", False, first_at_start)


@dataclass(frozen=True)
class Split(PreTokenizer):
    """`Split`: `pattern` (a Regex, or a String escaped to one) with a SplitDelimiterBehavior and
    `invert`; patterns `onig_to_python` cannot translate are refused."""

    pattern: str
    behavior: str = "Isolated"
    invert: bool = False

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "Split":
        pat = obj.get("pattern")
        if not isinstance(pat, dict) or len(pat) != 1 or not isinstance(next(iter(pat.values())), str):
            raise UnsupportedTokenizerError(where, f"{fieldname}.pattern", pat)
        (ptype, ptext), = pat.items()
        if ptype == "String":
            import regex

            ptext = regex.escape(ptext)
        elif ptype != "Regex":
            raise UnsupportedTokenizerError(where, f"{fieldname}.pattern", pat)
        invert = obj.get("invert", False)
        if not isinstance(invert, bool):
            raise UnsupportedTokenizerError(where, f"{fieldname}.invert", invert)
        behavior = obj.get("behavior", "Isolated")
        if behavior not in BEHAVIORS:
            raise UnsupportedTokenizerError(where, f"{fieldname}.behavior", behavior)
        try:
            compile_onig(ptext)
        except ValueError as e:
            raise UnsupportedTokenizerError(where, f"{fieldname}.pattern", pat, str(e)) from None
        return cls(ptext, behavior, invert)

    @property
    def label(self) -> str:
        return self.pattern

    @property
    def isolated_pattern(self) -> str | None:
        return self.pattern if self.behavior == "Isolated" and not self.invert else None

    @functools.cached_property
    def _compiled(self):
        return compile_onig(self.pattern)

    def pre_tokenize(self, pieces: list[str], first_at_start: bool) -> tuple[list[str], bool]:
        return split_pieces(pieces, self._compiled, self.behavior, self.invert, first_at_start)


@dataclass(frozen=True)
class Digits(PreTokenizer):
    """`Digits`: runs of numeric characters (Rust's `is_numeric`) apart from the rest; with
    `individual`, every numeric character a piece of its own."""

    individual: bool = False

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "Digits":
        return cls(bool(obj.get("individual_digits", False)))

    @property
    def label(self) -> str:
        return "digits"

    def pre_tokenize(self, pieces: list[str], first_at_start: bool) -> tuple[list[str], bool]:
        out = []
        for p in pieces:
            cur = ""
            prev_d = False
            for ch in p:
                d = is_numeric(ch)
                if cur and (d != prev_d or (d and self.individual)):
                    out.append(cur)
                    cur = ""
                cur += ch
                prev_d = d
            if cur:
                out.append(cur)
        return out, first_at_start


@dataclass(frozen=True)
class Metaspace(PreTokenizer):
    """`Metaspace` (see `metaspace_split`); character-level models only."""

    replacement: str = "\u2581"
    prepend_scheme: str = "always"
    split: bool = True

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "Metaspace":
        return cls(*metaspace_fields(obj, where, fieldname), bool(obj.get("split", True)))

    @property
    def label(self) -> str:
        return "metaspace"

    def pre_tokenize(self, pieces: list[str], first_at_start: bool) -> tuple[list[str], bool]:
        return metaspace_split(pieces, self.replacement, self.prepend_scheme, self.split, first_at_start), \
            first_at_start


PRE_TOKENIZERS = {"ByteLevel": ByteLevel, "Split": Split, "Digits": Digits, "Metaspace": Metaspace}


def read_pre_tokenizers(obj, where: str) -> list[PreTokenizer]:
    """The stages of a tokenizer.json `pre_tokenizer` value (null: none)."""
    return read_stages(obj, where, "pre_tokenizer", "pretokenizers", PRE_TOKENIZERS, "supported")


def pre_tokenize(stages, s: str, at_start: bool = True) -> list[str]:
    """The non-empty pieces of `s` after the stages in order; at_start: `s` begins the text."""
    pieces = [s]
    first_at_start = at_start
    for stage in stages:
        pieces, first_at_start = stage.pre_tokenize(pieces, first_at_start)
    return [p for p in pieces if p]
