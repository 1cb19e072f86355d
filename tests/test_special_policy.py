"""SpecialPolicy: one frozen object per (allowed_special, disallowed_special), read by every front end."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tltok_jit
from tltok_jit import get_encoding
from tltok_jit.engine.special_policy import SpecialPolicy


@pytest.fixture(scope="module")
def enc():
    return get_encoding("cl100k_base")


def test_defaults_built_once_and_frozen(enc):
    p = enc.special_policy()
    assert p is enc.special_policy(set(), "all")
    assert isinstance(p, SpecialPolicy)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.any_allowed = True
    assert not p.allowed.flags.writeable and not p.disallowed.flags.writeable
    assert p.refused == frozenset(enc.special_tokens_set) and not p.any_allowed and p.finder is None


def test_allowed_all_refuses_nothing(enc):
    p = enc.special_policy("all")
    assert p.any_allowed and p.allowed.all() and not p.refused and p.disallowed is None and p.finder is None
    assert p.allowed_tokens == frozenset(enc.special_tokens_set)
    assert enc.special_policy("all") is p and enc.special_policy("all", ()) is enc.special_policy("all", ())
    assert enc.special_policy({"<|endoftext|>"}) is not enc.special_policy({"<|endoftext|>"})  # not cached


def test_unknown_allowed_strings_are_ignored(enc):
    p = enc.special_policy({"<|endoftext|>", "not a token"})
    assert p.allowed_tokens == {"<|endoftext|>"} and int(p.allowed.sum()) == 1
    assert "<|endoftext|>" not in p.refused and "<|fim_prefix|>" in p.refused


def test_refused_plain_string_uses_a_text_search(enc):
    # tiktoken refuses any disallowed string, special token or not
    p = enc.special_policy(set(), {"hello", "<|endoftext|>"})
    assert p.disallowed is None and p.finder is not None and p.refused == {"hello", "<|endoftext|>"}
    for call in (lambda t: enc.encode(t, disallowed_special={"hello"}),
                 lambda t: enc.encode_batch([t], disallowed_special={"hello"}),
                 lambda t: enc.encode_arrow([t], disallowed_special={"hello"}),
                 lambda t: enc.stream_encoder(disallowed_special={"hello"}).feed(t)):
        with pytest.raises(ValueError, match="disallowed special token .hello."):  # (Arrow: ArrowRowError)
            call("say hello there")
        call("say hi there")  # no error without it


def test_mask_policy_matches_the_strings(enc):
    p = enc.special_policy({"<|endoftext|>"}, "all")
    added = [t for t, _ in sorted(enc._special_tokens.items(), key=lambda kv: enc.engine.added_index[kv[0]])]
    assert {t for t, m in zip(added, p.disallowed) if m} == p.refused
    assert {t for t, m in zip(added, p.allowed) if m} == p.allowed_tokens
    assert not (np.asarray(p.allowed) & np.asarray(p.disallowed)).any()


def test_exported_type():
    assert tltok_jit.SpecialPolicy is SpecialPolicy


@pytest.mark.parametrize("seed", range(3))
def test_first_refused_token_found_at_any_offset(enc, seed):
    """The added-token search skips eight bytes at a time: a token (or a lone first byte) at every
    offset around those steps is found where str.find finds it, after multi-byte text too."""
    from tltok_jit.kernels.encode import find_added
    from tltok_jit.engine.text import text_to_buf

    rng = np.random.default_rng(seed)
    policy = enc.special_policy()
    fill = "ab<c é中 x\n"
    for _ in range(200):
        head = "".join(rng.choice(list(fill), int(rng.integers(0, 40))))
        tail = "".join(rng.choice(list(fill), int(rng.integers(0, 12))))
        tok = ["<|endoftext|>", "<|endofprompt|>", "<|endoftext", "<"][int(rng.integers(0, 4))]
        text = head + tok + tail
        buf = text_to_buf(text)
        pos, idx = find_added(buf, 0, len(buf), enc.engine.tables, policy.disallowed)
        want = [(text.encode().find(t.encode()), t) for t in ("<|endoftext|>", "<|endofprompt|>")]
        want = min((p, t) for p, t in want if p >= 0) if any(p >= 0 for p, _ in want) else (-1, None)
        assert pos == want[0], text
        if pos >= 0:
            assert enc.engine.compiled.added[idx].content == want[1]
