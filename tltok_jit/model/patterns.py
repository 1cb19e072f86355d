"""The split patterns we have hand-written scanners for, by their exact text, and what each pattern
kind is: the one place that says which kinds exist, which pattern texts they implement, and what the
other parts of the package may do with them (cut long rows, stream)."""

from __future__ import annotations

from dataclasses import dataclass

R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
# The original GPT-2 release's pattern; tiktoken's R50K_PATTERN is its faster equivalent.
GPT2_ORIGINAL_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# Split regexes of Hugging Face tokenizer.json files, exactly as the files state them (Oniguruma syntax).
LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN2_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
TEKKEN_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*""",
        r"""\p{N}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

PATTERN_KINDS: dict[str, str] = {
    R50K_PATTERN: "gpt2",
    GPT2_ORIGINAL_PATTERN: "gpt2",
    CL100K_PATTERN: "cl100k",
    O200K_PATTERN: "o200k",
    LLAMA3_PATTERN: "llama3",
    QWEN2_PATTERN: "qwen2",
    TEKKEN_PATTERN: "tekken",
}


def kind_of_pattern(pattern: str) -> str | None:
    """The scanner kind implementing `pattern` exactly, or None."""
    return PATTERN_KINDS.get(pattern)


@dataclass(frozen=True)
class PatternKind:
    """One scanner kind (its kernel code is tables.PATTERN_CODES[name]).

    label:        how messages name it.
    column_cuts:  arrow.find_cuts' proof covers it: encode_arrow cuts long rows there, and one long
                  text splits over threads.
    streams:      the stream encoder's boundary rules are proven for it.
    """

    name: str
    label: str
    column_cuts: bool
    streams: bool


KINDS: dict[str, PatternKind] = {k.name: k for k in (
    PatternKind("gpt2", "gpt2/r50k", column_cuts=True, streams=True),
    PatternKind("cl100k", "cl100k", column_cuts=True, streams=True),
    PatternKind("o200k", "o200k", column_cuts=True, streams=True),
    PatternKind("llama3", "llama3", column_cuts=False, streams=True),
    PatternKind("qwen2", "qwen2", column_cuts=False, streams=True),
    PatternKind("tekken", "tekken", column_cuts=False, streams=True),
    PatternKind("gpt2_digits", "gpt2+digits", column_cuts=False, streams=True),  # Digits(individual) + ByteLevel
    PatternKind("whole", "whole pieces", column_cuts=False, streams=False),  # one row = one Python-made piece
)}
