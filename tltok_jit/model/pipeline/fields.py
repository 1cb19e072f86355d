"""Reading a tokenizer.json stage value: `Sequence` flattening, the `type` dispatch through a
registry, and the fields Metaspace's pre-tokenizer and decoder share."""

from __future__ import annotations

from ...errors import TokenizerFileError, UnsupportedTokenizerError

__all__ = ["flatten", "metaspace_fields", "read_stages"]


def _type(obj, where: str, fieldname: str):
    if not isinstance(obj, dict):
        raise TokenizerFileError(f"{where}: {fieldname} must be an object, got {type(obj).__name__}")
    return obj.get("type")


def flatten(obj, where: str, fieldname: str, listkey: str) -> list[tuple[str, dict]]:
    """(field name, JSON object) of every stage of `obj`, nested `Sequence`s (items under `listkey`)
    flattened in order; [] for null."""
    if obj is None:
        return []
    if _type(obj, where, fieldname) == "Sequence":
        items = obj.get(listkey)
        if not isinstance(items, list):
            raise TokenizerFileError(f"{where}: {fieldname}.{listkey} must be a list")
        out = []
        for i, x in enumerate(items):
            out += flatten(x, where, f"{fieldname}.{listkey}[{i}]", listkey)
        return out
    return [(fieldname, obj)]


def read_stages(obj, where: str, fieldname: str, listkey: str, registry: dict, supported: str) -> list:
    """The stage objects of `obj` (see `flatten`), each built by its registry class's `from_json`; a
    type missing from `registry` is refused, the hint listing `supported` ones."""
    out = []
    for fname, d in flatten(obj, where, fieldname, listkey):
        t = d.get("type")
        cls = registry.get(t) if isinstance(t, str) else None
        if cls is None:
            names = ", ".join([*registry, "Sequence"])
            raise UnsupportedTokenizerError(where, f"{fname}.type", t, f"{supported}: {names}")
        out.append(cls.from_json(d, where, fname))
    return out


def metaspace_fields(obj: dict, where: str, fieldname: str) -> tuple[str, str]:
    """(replacement character, prepend scheme) of a Metaspace object, the older `add_prefix_space`
    form read as its scheme."""
    rep = obj.get("replacement", "\u2581")
    if not isinstance(rep, str) or len(rep) != 1:
        raise UnsupportedTokenizerError(where, f"{fieldname}.replacement", rep, "one character")
    scheme = obj.get("prepend_scheme")
    if scheme is None:  # the older form
        scheme = "always" if obj.get("add_prefix_space", True) else "never"
    if scheme not in ("always", "first", "never"):
        raise UnsupportedTokenizerError(where, f"{fieldname}.prepend_scheme", scheme)
    return rep, scheme
