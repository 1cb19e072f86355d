"""`symbol_table`: the id -> piece table of WeNet and icefall CTC models (decode only).

Decode is icefall's (and WeNet's BPE tokenizer's) rule with the special ids dropped first:
`"".join(piece[i] for i in ids if i not in special_ids).replace("\\u2581", " ").strip()`.
The rendering is piece-local except for the final strip, so `decode_incremental` costs only the
new ids and `token_pieces` is a table gather.

Special ids are derived by name (`<blank> <blk> <unk> <sos/eos> <sos> <eos> <s> </s>`), since
WeNet <= 2.x tables put `<sos/eos>` last and a real unit at id 2; {0, 1, 2} only when none of those
names is present; `options["special_ids"]` overrides both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..loaders.units_file import read_units
from ..tokenizer import (
    EncodeNotSupportedError,
    TokenIdError,
    Tokenizer,
    TokenizerAssetError,
    TokenizerSpec,
)
from .row_columns import RowColumns

__all__ = ["SPECIAL_NAMES", "SymbolTableTokenizer", "build"]

SPECIAL_NAMES = ("<blank>", "<blk>", "<unk>", "<sos/eos>", "<sos>", "<eos>", "<s>", "</s>")
_DEFAULT_SPECIALS = (0, 1, 2)


def default_special_ids(table: dict[int, str]) -> frozenset[int]:
    """The ids of the special names present, else those of {0, 1, 2} present."""
    by_name = frozenset(i for i, p in table.items() if p in SPECIAL_NAMES)
    return by_name or frozenset(i for i in _DEFAULT_SPECIALS if i in table)


class SymbolTableTokenizer(RowColumns, Tokenizer):
    """A units.txt / tokens.txt table: decode only."""

    kind = "symbol_table"
    supports_encode = False

    def __init__(self, table: dict[int, str], special_ids: Iterable[int] | None = None, *, source: str = ""):
        self.vocab_size = max(table) + 1
        self.source = source
        if special_ids is None:
            self.special_ids = default_special_ids(table)
        else:
            special = frozenset(special_ids)
            bad = sorted(i for i in special if type(i) is not int or i not in table)
            if bad:
                raise TokenIdError(f"special_ids {bad} are not ids of the symbol table {source}")
            self.special_ids = special
        self.pieces = {i: table[i] for i in sorted(table)}
        # id -> rendered text ("" for special ids), None for ids the table lacks.
        rendered = np.full(self.vocab_size, None, dtype=object)
        for i, p in table.items():
            rendered[i] = "" if i in self.special_ids else p.replace("\u2581", " ")
        self._rendered = rendered
        self._valid = np.array([r is not None for r in rendered], dtype=np.bool_)

    # ------------------------------------------------------------------ helpers
    def _render(self, ids) -> np.ndarray:
        """The rendered text of each id (object array), every id checked."""
        arr = np.asarray(self.check_ids(ids), dtype=np.int64)
        if arr.size:
            missing = ~self._valid[arr]
            if missing.any():
                pos = int(np.argmax(missing))
                raise TokenIdError(f"token id {int(arr[pos])} at position {pos} is not in the symbol table {self.source}")
        return self._rendered[arr]

    # ------------------------------------------------------------------ contract
    def encode(self, text: str) -> list[int]:
        raise EncodeNotSupportedError("a symbol_table tokenizer is decode-only (supports_encode is False)")

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self._render(ids)).strip()

    def decode_incremental(self, new_ids: Sequence[int], state: dict, *, final: bool = False) -> str:
        """Trailing whitespace is held back (the final strip would remove it); `final` changes nothing.
        O(new ids) at any length: the held whitespace is a chain of its parts, joined once text follows."""
        added = "".join(self._render(new_ids))
        text = state.pop("text", "")  # the only reference left: the append below extends it in place
        if not text:
            added = added.lstrip()
            if not added:
                state["text"] = ""
                return ""
        held = state.get("_ws")  # None, or (earlier parts, last part): never changed in place
        visible = added.rstrip()
        if not visible:
            if added:
                state["_ws"] = (held, added)
            state["text"] = text
            return ""
        tail = added[len(visible):]
        if held is not None:
            parts = [visible]
            while held is not None:
                held, part = held
                parts.append(part)
            visible = "".join(reversed(parts))
        state["_ws"] = (None, tail) if tail else None
        text += visible
        state["text"] = text
        return visible

    def token_pieces(self, ids: Sequence[int]) -> list[str]:
        pieces = self._render(ids)
        if not pieces.size:
            return []
        # Only the first and last visible pieces lose anything to the strip.
        visible = np.flatnonzero(np.fromiter((bool(p.strip()) for p in pieces), dtype=np.bool_, count=pieces.size))
        if not visible.size:
            return [""] * pieces.size
        first, last = int(visible[0]), int(visible[-1])
        pieces[:first] = ""
        pieces[last + 1:] = ""
        pieces[first] = pieces[first].lstrip()
        pieces[last] = pieces[last].rstrip()
        return pieces.tolist()


def build(spec: TokenizerSpec) -> SymbolTableTokenizer:
    """`files`: {"units": path} (or {"tokens": path}); `options`: {"special_ids": [...]}."""
    keys = [k for k in ("units", "tokens") if k in spec.files]
    if len(keys) != 1:
        raise TokenizerAssetError(
            f"tokenizer kind 'symbol_table' needs exactly one of the assets 'units' or 'tokens'; the spec gives {sorted(spec.files)}")
    path = spec.asset(keys[0])
    unknown = set(spec.options) - {"special_ids"}
    if unknown:
        raise TokenizerAssetError(f"tokenizer kind 'symbol_table': unknown options {sorted(unknown)}")
    special = spec.options.get("special_ids")
    return SymbolTableTokenizer(read_units(path, key=keys[0]), special, source=path)
