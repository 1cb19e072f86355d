"""The two decode-in-pieces contracts of tltok_jit.Tokenizer, as checks the kind tests share.

decode_incremental: after every chunk state["text"] is the deltas so far joined, a prefix of
decode(ids so far) (so no later chunk revises it), and after a final call it equals decode(all ids).
token_pieces: one piece per id, joining to decode(ids).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def chunked(ids: list[int], cuts: list[int]) -> list[list[int]]:
    """`ids` split at the (sorted, deduplicated) positions `cuts`."""
    bounds = [0] + sorted({c % (len(ids) + 1) for c in cuts}) + [len(ids)]
    return [ids[a:b] for a, b in zip(bounds, bounds[1:])]


def check_incremental(tok, ids: list[int], cuts: list[int]) -> None:
    state: dict = {}
    emitted = ""
    done: list[int] = []
    for chunk in chunked(ids, cuts):
        emitted += tok.decode_incremental(chunk, state)
        done += chunk
        full = tok.decode(done)
        assert state["text"] == emitted, (done, state["text"], emitted)
        assert full.startswith(emitted), (done, emitted, full)
    emitted += tok.decode_incremental([], state, final=True)
    assert emitted == tok.decode(ids) == state["text"], (ids, emitted, state["text"])


def check_pieces(tok, ids: list[int]) -> None:
    pieces = tok.token_pieces(ids)
    assert len(pieces) == len(ids)
    assert all(isinstance(p, str) for p in pieces)
    assert "".join(pieces) == tok.decode(ids), (ids, pieces)


def id_lists(ids_strategy, max_size: int = 24):
    return st.lists(ids_strategy, max_size=max_size)


cut_lists = st.lists(st.integers(min_value=0, max_value=64), max_size=6)
