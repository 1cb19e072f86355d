"""tokenizer.json post-processors: `ByteLevel` (offsets only: adds nothing), `TemplateProcessing`
(single sequence), in a `Sequence`; what `add_special_tokens=True` puts around one sequence."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import TokenizerFileError, UnsupportedTokenizerError
from .fields import flatten, read_stages

__all__ = ["ByteLevel", "POST_PROCESSORS", "PostProcessor", "TemplateProcessing", "read_post_processors",
           "template_ids"]


class PostProcessor:
    """One post-processor stage: the ids it puts before and after a single sequence."""

    prefix_ids: tuple[int, ...] = ()
    suffix_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class ByteLevel(PostProcessor):
    """`ByteLevel`: it only adjusts offsets, so it adds no ids."""

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "ByteLevel":
        return cls()


@dataclass(frozen=True)
class TemplateProcessing(PostProcessor):
    """`TemplateProcessing` of a single sequence: the special tokens' ids before and after `$A`; a
    template using sequence B is refused."""

    prefix_ids: tuple[int, ...] = ()
    suffix_ids: tuple[int, ...] = ()

    @classmethod
    def from_json(cls, obj: dict, where: str, fieldname: str) -> "TemplateProcessing":
        prefix: list[int] = []
        suffix: list[int] = []
        specials = obj.get("special_tokens")
        if specials is None:
            specials = {}
        if not isinstance(specials, dict):
            raise TokenizerFileError(f"{where}: {fieldname}.special_tokens must be an object")
        single = obj.get("single")
        if not isinstance(single, list):
            raise TokenizerFileError(f"{where}: {fieldname}.single must be a list")
        before = True
        for item in single:
            if not isinstance(item, dict) or len(item) != 1 or not isinstance(next(iter(item.values())), dict):
                raise TokenizerFileError(f"{where}: {fieldname}.single has a malformed item {item!r}")
            (k, v), = item.items()
            if k == "Sequence":
                if v.get("id") != "A":
                    raise UnsupportedTokenizerError(where, f"{fieldname}.single", single, "single uses sequence B")
                before = False
            elif k == "SpecialToken":
                name = v.get("id")
                sp = specials.get(name) if isinstance(name, str) else None
                if not isinstance(sp, dict) or not isinstance(sp.get("ids"), list):
                    raise TokenizerFileError(f"{where}: {fieldname}.single uses {name!r}, not in special_tokens")
                for i in sp["ids"]:
                    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < 2**32:
                        raise TokenizerFileError(
                            f"{where}: {fieldname}.special_tokens[{name!r}].ids holds {i!r}, not a token id")
                (prefix if before else suffix).extend(sp["ids"])
            else:
                raise TokenizerFileError(f"{where}: {fieldname}.single has a malformed item {item!r}")
        return cls(tuple(prefix), tuple(suffix))


POST_PROCESSORS = {"ByteLevel": ByteLevel, "TemplateProcessing": TemplateProcessing}


def read_post_processors(obj, where: str) -> tuple[PostProcessor, ...]:
    """The stages of a tokenizer.json `post_processor` value (null: none); a second
    TemplateProcessing is refused."""
    stages = []
    for fname, d in flatten(obj, where, "post_processor", "processors"):
        if d.get("type") == "TemplateProcessing" and any(isinstance(s, TemplateProcessing) for s in stages):
            raise UnsupportedTokenizerError(where, fname, "a second TemplateProcessing")
        stages += read_stages(d, where, fname, "processors", POST_PROCESSORS, "supported post-processors")
    return tuple(stages)


def template_ids(stages: tuple[PostProcessor, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(prefix ids, suffix ids) the stages put around a single sequence."""
    return (tuple(i for s in stages for i in s.prefix_ids), tuple(i for s in stages for i in s.suffix_ids))
