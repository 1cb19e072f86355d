"""Class codes and the two-stage lookup table the scanners index.

A code point's class is `stage2[stage1[cp >> 8] * 256 + (cp & 255)]`. The table is validated here
once (every stage1 entry points inside stage2), so kernels index it without bounds checks.
"""

from __future__ import annotations

import base64
import zlib
from functools import lru_cache

import numpy as np

CLS_OTHER = 0
CLS_LU = 1
CLS_LL = 2
CLS_LT = 3
CLS_LM = 4
CLS_LO = 5
CLS_MARK = 6
CLS_NUMBER = 7
CLS_SPACE = 8  # the White_Space property (regex `\s`)

DEFAULT_UNICODE = "16"


@lru_cache(maxsize=None)
def class_tables(unicode_major: str = DEFAULT_UNICODE) -> tuple[np.ndarray, np.ndarray, str]:
    """(stage1 uint16[4352], stage2 uint8[...], full version string) for a shipped Unicode version."""
    import importlib

    try:
        mod = importlib.import_module(f"tltok_jit.unicode.data_u{unicode_major}")
    except ImportError:
        raise ValueError(f"no character-class table for Unicode {unicode_major} is shipped") from None
    raw = zlib.decompress(base64.b64decode("".join(mod.DATA)))
    stage1 = np.frombuffer(raw[: 2 * mod.STAGE1_LEN], dtype=np.uint16).copy()
    stage2 = np.frombuffer(raw[2 * mod.STAGE1_LEN:], dtype=np.uint8).copy()
    if len(stage1) != 0x110000 >> 8 or len(stage2) != mod.STAGE2_LEN or len(stage2) % 256:
        raise ValueError(f"corrupt character-class table data_u{unicode_major}")
    if int(stage1.max()) * 256 + 255 >= len(stage2) or int(stage2.max()) > CLS_SPACE:
        raise ValueError(f"corrupt character-class table data_u{unicode_major}")
    stage1.flags.writeable = False
    stage2.flags.writeable = False
    return stage1, stage2, mod.UNICODE_VERSION


def char_class(ch: str, unicode_major: str = DEFAULT_UNICODE) -> int:
    """The class code of one character (Python side, for tests and the slow path)."""
    s1, s2, _ = class_tables(unicode_major)
    cp = ord(ch)
    return int(s2[int(s1[cp >> 8]) * 256 + (cp & 255)])
