"""Splitting with the `regex` module as if its Unicode data were 16.0 (the version of the scanner
tables, tiktoken 0.14 and tokenizers 0.23's Oniguruma): the exact Python pretokenizers use this.

The `regex` module's Unicode data may be newer (regex 2026: Unicode 17). Before a Python split, each
code point whose class (Lu Ll Lt Lm Lo M N White_Space, or none of them) differs between the two is
replaced by a stand-in of its Unicode 16 class: the text keeps its length, so the positions found
apply to it.
"""

from __future__ import annotations

import functools
import re

import numpy as np

_STANDINS = {0: "\ufdd0", 1: "\u2c00", 2: "\u2c30", 3: "\u01c5", 4: "\u02b0", 5: "\ua000", 6: "\u1dc0",
             7: "\U0001d7ce", 8: "\u3000"}
CLASS_PROPS = ((1, r"\p{Lu}"), (2, r"\p{Ll}"), (3, r"\p{Lt}"), (4, r"\p{Lm}"), (5, r"\p{Lo}"), (6, r"\p{M}"),
                (7, r"\p{N}"), (8, r"\s"))


def regex_class_array() -> np.ndarray:
    """uint8[0x110000]: each code point's class (the codes of tltok_jit.unicode) per the `regex` module."""
    import regex

    cps = np.arange(0x110000, dtype=np.uint32)
    cps = cps[(cps < 0xD800) | (cps >= 0xE000)]
    text = cps.tobytes().decode("utf-32-le")
    out = np.zeros(0x110000, dtype=np.uint8)
    for code, prop in CLASS_PROPS:
        kept = regex.sub("[^" + prop + "]+", "", text)
        out[np.frombuffer(kept.encode("utf-32-le"), dtype=np.uint32)] = code
    return out


@functools.lru_cache(maxsize=1)
def _unicode16_fix():
    """(regex of the code points to replace or None, str.translate table)."""
    from . import class_tables

    s1, s2, _ = class_tables()
    cps = np.arange(0x110000, dtype=np.int64)
    ours = s2[(s1[cps >> 8].astype(np.int64) << 8) | (cps & 255)]
    theirs = regex_class_array()
    diff = [int(c) for c in np.nonzero(ours != theirs)[0] if not 0xD800 <= c < 0xE000]
    if not diff:
        return None, {}
    table = {c: _STANDINS[int(ours[c])] for c in diff}
    runs = []
    for c in diff:
        if runs and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    cls = "".join(f"\\U{a:08x}" + (f"-\\U{b:08x}" if b != a else "") for a, b in runs)
    return re.compile("[" + cls + "]"), table


def unicode16_text(s: str) -> str:
    if s.isascii():
        return s
    finder, table = _unicode16_fix()
    if finder is None or finder.search(s) is None:
        return s
    return s.translate(table)
