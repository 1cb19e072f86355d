"""Extended grapheme cluster properties (UAX #29) as a two-stage table for the kernels.

A code point's entry is `stage2[stage1[cp >> 8] * 256 + (cp & 255)]` (uint8): bits 0-3 its
Grapheme_Cluster_Break (G_*), bit 4 Extended_Pictographic, bits 5-6 its Indic_Conjunct_Break
(INCB_*). The ranges come from `graphemes_data` (generated from the `regex` module).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import graphemes_data as D

__all__ = ["G_CONTROL", "G_CR", "G_EXTEND", "G_L", "G_LF", "G_LV", "G_LVT", "G_OTHER", "G_PREPEND", "G_RI",
           "G_SPACINGMARK", "G_T", "G_V", "G_ZWJ", "F_EXTPICT", "INCB_CONSONANT", "INCB_EXTEND", "INCB_LINKER",
           "INCB_SHIFT", "grapheme_tables"]

G_OTHER, G_CR, G_LF, G_CONTROL, G_EXTEND, G_ZWJ, G_RI, G_PREPEND, G_SPACINGMARK, G_L, G_V, G_T, G_LV, G_LVT = range(14)
F_EXTPICT = 16
INCB_SHIFT = 5
INCB_LINKER, INCB_CONSONANT, INCB_EXTEND = 1, 2, 3

_GCB = ((G_CR, D.GCB_CR), (G_LF, D.GCB_LF), (G_CONTROL, D.GCB_CONTROL), (G_EXTEND, D.GCB_EXTEND),
        (G_ZWJ, D.GCB_ZWJ), (G_RI, D.GCB_REGIONAL_INDICATOR), (G_PREPEND, D.GCB_PREPEND),
        (G_SPACINGMARK, D.GCB_SPACINGMARK), (G_L, D.GCB_L), (G_V, D.GCB_V), (G_T, D.GCB_T), (G_LV, D.GCB_LV),
        (G_LVT, D.GCB_LVT))


@lru_cache(maxsize=1)
def grapheme_tables() -> tuple[np.ndarray, np.ndarray]:
    """(stage1 uint16 [0x1100], stage2 uint8), read-only; built once per process."""
    info = np.zeros(0x110000, np.uint8)
    for value, ranges in _GCB:
        for a, b in ranges:
            info[a:b + 1] = value
    for a, b in D.EXTENDED_PICTOGRAPHIC:
        info[a:b + 1] |= F_EXTPICT
    for value, ranges in ((INCB_LINKER, D.INCB_LINKER), (INCB_CONSONANT, D.INCB_CONSONANT),
                          (INCB_EXTEND, D.INCB_EXTEND)):
        for a, b in ranges:
            info[a:b + 1] |= value << INCB_SHIFT
    rows = info.reshape(0x1100, 256)
    index: dict[bytes, int] = {}
    stage1 = np.empty(0x1100, np.uint16)
    for b in range(0x1100):
        stage1[b] = index.setdefault(rows[b].tobytes(), len(index))
    stage2 = np.frombuffer(b"".join(index), np.uint8).copy()
    stage1.flags.writeable = False
    stage2.flags.writeable = False
    return stage1, stage2
