"""`tables.TableConfig`: the config array of the tables by name, in the slots the kernels read."""

from __future__ import annotations

import numpy as np

import tltok_jit
from tltok_jit.kernels.encode import CFG_IGNORE_MERGES, CFG_PATTERN, CFG_TREES, CFG_USE_CACHE
from tltok_jit.kernels.scan import PAT_O200K, PAT_WHOLE
from tltok_jit.tables.bpe import TREES_MONOTONE, TREES_SAME, TableConfig, table_config, with_config


def test_fields_are_the_kernel_slots():
    T = tltok_jit.get_encoding("o200k_base").engine.tables
    cfg = table_config(T)
    assert cfg == TableConfig(pattern_kind=PAT_O200K, ignore_merges=True, use_cache=True,
                              trees=TREES_SAME | TREES_MONOTONE)
    assert [cfg.pattern_kind, cfg.ignore_merges, cfg.use_cache, cfg.trees] == \
        [int(T.config[CFG_PATTERN]), bool(T.config[CFG_IGNORE_MERGES]), bool(T.config[CFG_USE_CACHE]),
         int(T.config[CFG_TREES])]
    a = cfg.array()
    assert a.dtype == np.int64 and a.shape == (4,) and a.flags.c_contiguous and not a.flags.writeable
    assert np.array_equal(a, T.config)


def test_with_config_replaces_only_the_named_fields():
    T = tltok_jit.get_encoding("o200k_base").engine.tables
    W = with_config(T, pattern_kind=PAT_WHOLE, ignore_merges=False)
    assert table_config(W) == table_config(T)._replace(pattern_kind=PAT_WHOLE, ignore_merges=False)
    assert W.tok_bytes is T.tok_bytes and W.pair_slots is T.pair_slots
    assert table_config(T).pattern_kind == PAT_O200K  # T itself unchanged
    assert not W.config.flags.writeable  # the kernels' read-only array type: no new variant
