"""Reader of WeNet `units.txt` / icefall `tokens.txt` symbol tables: one "<piece> <id>" per line."""

from __future__ import annotations

from ..errors import TokenizerAssetError

__all__ = ["read_units"]


def read_units(path: str, *, key: str = "units") -> dict[int, str]:
    """id -> piece. Each non-empty line is exactly two whitespace-separated fields, the second a
    non-negative integer (WeNet's `read_symbol_table` asserts the same); ids and pieces are unique, and
    the largest id is below twice the number of symbols plus 1024."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except UnicodeDecodeError as e:
        raise TokenizerAssetError(f"asset {key!r} ({path}) is not UTF-8: {e}") from None
    except OSError as e:
        raise TokenizerAssetError(f"asset {key!r} ({path}) cannot be read: {e}") from None
    table: dict[int, str] = {}
    seen: dict[str, int] = {}
    for lineno, line in enumerate(lines, 1):
        fields = line.split()
        if not fields:
            continue
        where = f"asset {key!r} ({path}) line {lineno}"
        if len(fields) != 2:
            raise TokenizerAssetError(f"{where}: expected '<piece> <id>', got {len(fields)} fields: {line!r}")
        piece, id_text = fields
        if not id_text.isascii() or not id_text.isdigit():
            raise TokenizerAssetError(f"{where}: id {id_text!r} is not a non-negative integer")
        i = int(id_text)
        if i in table:
            raise TokenizerAssetError(f"{where}: duplicate id {i} (also {table[i]!r})")
        if piece in seen:
            raise TokenizerAssetError(f"{where}: duplicate piece {piece!r} (also id {seen[piece]})")
        table[i] = piece
        seen[piece] = i
    if not table:
        raise TokenizerAssetError(f"asset {key!r} ({path}) holds no symbols")
    # The tokenizer's arrays are indexed by id: a table whose ids are mostly unused would size them
    # by one stray large id.
    top = max(table)
    bound = 2 * len(table) + 1024
    if top >= bound:
        lineno = next(n for n, line in enumerate(lines, 1) if line.split()[1:] and int(line.split()[1]) == top)
        raise TokenizerAssetError(f"asset {key!r} ({path}) line {lineno}: id {top} is too large for "
                                  f"{len(table)} symbols (ids must be below {bound}, twice their number plus 1024)")
    return table
