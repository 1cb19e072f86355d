"""What a tokenizer.json says about batches: the post-processor's single and pair templates, and the
file's own `truncation` and `padding` (applied by `encode_batch_padded` when a call gives none, as
`tokenizers`' `encode_batch` applies them)."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import TokenizerFileError, UnsupportedTokenizerError

__all__ = ["Padding", "Template", "Truncation", "read_padding", "read_template", "read_truncation"]


@dataclass(frozen=True)
class Template:
    """A post-processor's single and pair templates: pieces ("A" | "B" | "ids", ids, type_id)."""

    single: tuple
    pair: tuple

    def added(self, pair: bool) -> int:
        """The ids the template puts around one text (`pair`: around two)."""
        return sum(len(ids) for kind, ids, _t in (self.pair if pair else self.single) if kind == "ids")


@dataclass(frozen=True)
class Truncation:
    max_length: int
    stride: int
    strategy: str   # longest_first, only_first, only_second
    direction: str  # right, left


@dataclass(frozen=True)
class Padding:
    length: int | None  # Fixed length, None: BatchLongest
    direction: str
    pad_to_multiple_of: int | None
    pad_id: int
    pad_type_id: int


def _shown(v, limit: int = 200) -> str:
    r = repr(v)
    return r if len(r) <= limit else r[:limit] + "..."


def _count(v, where: str, fieldname: str, least: int = 0, most: int | None = None) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < least or (most is not None and v > most):
        bound = f"{least}.." + (str(most) if most is not None else "")
        raise TokenizerFileError(f"{where}: {fieldname} must be an integer in {bound}, got {_shown(v)}")
    return v


def _special_ids(name, specials: dict, known, where: str, fieldname: str) -> tuple:
    entry = specials.get(name) if isinstance(name, str) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("ids"), list):
        raise TokenizerFileError(f"{where}: {fieldname} names special token {name!r}, which "
                                 "post_processor.special_tokens does not define")
    ids = tuple(entry["ids"])
    for i in ids:
        if not isinstance(i, int) or isinstance(i, bool) or i not in known:
            raise TokenizerFileError(f"{where}: post_processor.special_tokens[{name!r}] has id {_shown(i)}, "
                                     "which is no token")
    return ids


def _template_pieces(items, specials, known, where: str, fieldname: str, allowed: str) -> tuple:
    if not isinstance(items, list):
        raise TokenizerFileError(f"{where}: {fieldname} must be a list")
    out = []
    for k, it in enumerate(items):
        f = f"{fieldname}[{k}]"
        if not isinstance(it, dict) or len(it) != 1:
            raise TokenizerFileError(f"{where}: {f} must be {{\"SpecialToken\": ...}} or {{\"Sequence\": ...}}")
        (kind, body), = it.items()
        if not isinstance(body, dict):
            raise TokenizerFileError(f"{where}: {f}.{kind} must be an object")
        type_id = _count(body.get("type_id", 0), where, f"{f}.{kind}.type_id", 0, 2**32 - 1)
        if kind == "SpecialToken":
            out.append(("ids", _special_ids(body.get("id"), specials, known, where, f), type_id))
        elif kind == "Sequence":
            seq = body.get("id")
            if seq not in allowed:
                raise UnsupportedTokenizerError(where, f"{f}.Sequence.id", seq)
            out.append((seq, (), type_id))
        else:
            raise UnsupportedTokenizerError(where, f, kind)
    seqs = [p[0] for p in out if p[0] != "ids"]
    if seqs != list(allowed):
        raise UnsupportedTokenizerError(where, fieldname, items, f"must hold {' then '.join(allowed)}, once each")
    return tuple(out)


def _one_template(obj: dict, known, where: str, fieldname: str) -> Template | None:
    t = obj.get("type")
    if t == "TemplateProcessing":
        specials = obj.get("special_tokens")
        specials = {} if specials is None else specials
        if not isinstance(specials, dict):
            raise TokenizerFileError(f"{where}: {fieldname}.special_tokens must be an object")
        return Template(
            single=_template_pieces(obj.get("single"), specials, known, where, f"{fieldname}.single", "A"),
            pair=_template_pieces(obj.get("pair"), specials, known, where, f"{fieldname}.pair", "AB"))
    if t == "BertProcessing":
        ids = []
        for key in ("cls", "sep"):
            v = obj.get(key)
            if not (isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], int)
                    and not isinstance(v[1], bool) and v[1] in known):
                raise TokenizerFileError(f"{where}: {fieldname}.{key} must be [token, id] of a token, "
                                         f"got {_shown(v)}")
            ids.append((v[1],))
        cls, sep = ids
        return Template(single=(("ids", cls, 0), ("A", (), 0), ("ids", sep, 0)),
                        pair=(("ids", cls, 0), ("A", (), 0), ("ids", sep, 0), ("B", (), 1), ("ids", sep, 1)))
    return None


def read_template(obj, known, where: str, others: tuple[str, ...] = ()) -> Template | None:
    """The template of a `post_processor` value: its TemplateProcessing or BertProcessing stage (in a
    `Sequence` too), None when it has neither (null, or stages that add no ids). `known`: the ids
    that are tokens; `others`: the stage types accepted beside them (refused otherwise)."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise TokenizerFileError(f"{where}: post_processor must be an object or null")
    stages = [("post_processor", obj)]
    if obj.get("type") == "Sequence":
        items = obj.get("processors")
        if not isinstance(items, list):
            raise TokenizerFileError(f"{where}: post_processor.processors must be a list")
        stages = [(f"post_processor.processors[{i}]", x) for i, x in enumerate(items)]
    found = None
    for fieldname, d in stages:
        if not isinstance(d, dict):
            raise TokenizerFileError(f"{where}: {fieldname} must be an object")
        tpl = _one_template(d, known, where, fieldname)
        if tpl is None:
            if d.get("type") not in others:
                raise UnsupportedTokenizerError(where, f"{fieldname}.type", d.get("type"),
                                                "TemplateProcessing, BertProcessing"
                                                + "".join(f", {o}" for o in others) + " or null")
            continue
        if found is not None:
            raise UnsupportedTokenizerError(where, fieldname, d.get("type"), "a second template")
        found = tpl
    return found


_STRATEGIES = {"LongestFirst": "longest_first", "OnlyFirst": "only_first", "OnlySecond": "only_second"}
_DIRECTIONS = {"Right": "right", "Left": "left"}


def read_truncation(obj, where: str) -> Truncation | None:
    """A tokenizer.json `truncation` value (null: None)."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise TokenizerFileError(f"{where}: truncation must be an object or null")
    strategy = obj.get("strategy", "LongestFirst")
    if strategy not in _STRATEGIES:
        raise UnsupportedTokenizerError(where, "truncation.strategy", strategy)
    direction = obj.get("direction", "Right")
    if direction not in _DIRECTIONS:
        raise UnsupportedTokenizerError(where, "truncation.direction", direction)
    return Truncation(max_length=_count(obj.get("max_length"), where, "truncation.max_length", 1),
                      stride=_count(obj.get("stride", 0), where, "truncation.stride"),
                      strategy=_STRATEGIES[strategy], direction=_DIRECTIONS[direction])


def read_padding(obj, n_ids: int, where: str) -> Padding | None:
    """A tokenizer.json `padding` value (null: None); `pad_id` must be below `n_ids`."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise TokenizerFileError(f"{where}: padding must be an object or null")
    s = obj.get("strategy")
    if s == "BatchLongest":
        length = None
    elif isinstance(s, dict) and list(s) == ["Fixed"]:
        length = _count(s["Fixed"], where, "padding.strategy.Fixed", 1)
    else:
        raise UnsupportedTokenizerError(where, "padding.strategy", s)
    direction = obj.get("direction", "Right")
    if direction not in _DIRECTIONS:
        raise UnsupportedTokenizerError(where, "padding.direction", direction)
    multiple = obj.get("pad_to_multiple_of")
    if multiple is not None:
        multiple = _count(multiple, where, "padding.pad_to_multiple_of", 1)
    return Padding(length=length, direction=_DIRECTIONS[direction], pad_to_multiple_of=multiple,
                   pad_id=_count(obj.get("pad_id", 0), where, "padding.pad_id", 0, n_ids - 1),
                   pad_type_id=_count(obj.get("pad_type_id", 0), where, "padding.pad_type_id", 0, 2**32 - 1))
