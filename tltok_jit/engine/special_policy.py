"""`SpecialPolicy`: what one call does with added tokens, built once from tiktoken's two arguments.

tiktoken's rules: `allowed_special` tokens are matched as their ids; `disallowed_special` strings raise
when the text contains one (``"all"``: every special token not allowed); the rest is plain text. Every
front end (Encoding, the Arrow columns, the stream encoder) reads the same frozen object instead of
re-deriving the rules from the arguments.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import AbstractSet, Literal

import numpy as np

AllowedSpecial = Literal["all"] | AbstractSet[str]
DisallowedSpecial = Literal["all"] | Collection[str]


@functools.lru_cache(maxsize=64)
def string_finder(strings: frozenset):
    """A regex matching any of `strings`, longest first (tiktoken's check for disallowed strings)."""
    import regex

    return regex.compile("|".join(regex.escape(s) for s in sorted(strings, key=len, reverse=True)))


@dataclass(frozen=True, eq=False)
class SpecialPolicy:
    """The added-token rules of one call.

    allowed:       read-only bool per added token (in the tables' order): matched as its id.
    allowed_tokens: the same as strings.
    any_allowed:   allowed.any(), precomputed (the kernels skip the added-token search without it).
    refused:       the disallowed strings, as given or implied by ``"all"``; empty: nothing is checked.
    disallowed:    read-only bool per added token, at least one set, when every refused string is an
                   added token: the kernels' added-token search finds them. Else None.
    finder:        when some refused string is no added token, a regex over all refused strings
                   (tiktoken refuses those too, so the check is a text search). Else None.
    """

    allowed: np.ndarray
    allowed_tokens: frozenset
    any_allowed: bool
    refused: frozenset
    disallowed: np.ndarray | None
    finder: object | None

    @property
    def checks(self) -> bool:
        """True: the text must be searched for refused strings before it is encoded."""
        return bool(self.refused)

    @property
    def ordinary(self) -> bool:
        """True: added tokens are plain text and nothing is refused (encode_ordinary's rules)."""
        return not self.any_allowed and not self.refused


def build_policy(allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial,
                 special_tokens: AbstractSet[str],
                 mask_of: Callable[[AbstractSet[str]], np.ndarray]) -> SpecialPolicy:
    """The policy for tiktoken's arguments over the added tokens `special_tokens`; `mask_of(strings)`
    gives the read-only added-token mask of those strings (others ignored).

    >>> import numpy as np
    >>> from tltok_jit.engine.special_policy import build_policy
    >>> p = build_policy(set(), "all", {"<|eot|>"}, lambda s: np.array(["<|eot|>" in s]))
    >>> p.any_allowed, sorted(p.refused), p.disallowed.tolist(), p.finder is None
    (False, ['<|eot|>'], [True], True)
    """
    allowed = frozenset(special_tokens if allowed_special == "all" else special_tokens & set(allowed_special))
    refused = frozenset(set(special_tokens) - allowed if disallowed_special == "all" else disallowed_special)
    amask = mask_of(allowed)
    any_allowed = bool(amask.any())
    if not refused:
        return SpecialPolicy(amask, allowed, any_allowed, refused, None, None)
    if refused <= special_tokens:
        return SpecialPolicy(amask, allowed, any_allowed, refused, mask_of(refused), None)
    return SpecialPolicy(amask, allowed, any_allowed, refused, None, string_finder(refused))
