"""patterns.KINDS is the one description of the scanner kinds: every other table agrees with it."""

from __future__ import annotations

import pytest

from tltok_jit import get_encoding
from tltok_jit.kernels import stream_encode as KS
from tltok_jit.model.patterns import KINDS, PATTERN_KINDS
from tltok_jit.tables.bpe import PATTERN_CODES, pattern_kind


def test_every_kind_has_one_kernel_code():
    assert set(PATTERN_CODES) == set(KINDS)
    assert len(set(PATTERN_CODES.values())) == len(PATTERN_CODES)
    assert set(PATTERN_KINDS.values()) <= set(KINDS)


def test_stream_kernels_serve_exactly_the_streaming_kinds():
    assert set(KS.STREAM_KINDS) == {PATTERN_CODES[k.name] for k in KINDS.values() if k.streams}


def test_column_cuts_only_where_find_cuts_is_proven():
    # arrow.find_cuts' proof covers the three tiktoken split patterns
    assert {k.name for k in KINDS.values() if k.column_cuts} == {"gpt2", "cl100k", "o200k"}


@pytest.mark.parametrize("name, kind", [("r50k_base", "gpt2"), ("cl100k_base", "cl100k"), ("o200k_base", "o200k")])
def test_pattern_kind_of_tables(name, kind):
    assert pattern_kind(get_encoding(name).engine.tables) is KINDS[kind]
