"""File-format readers. Every loader returns a `tltok_jit.model.ModelDescription` and raises
`tltok_jit.model.TokenizerFileError` (naming the file and the line or field) on malformed input."""

from .tiktoken_file import load_tiktoken_ranks, read_tiktoken_model

__all__ = ["load_tiktoken_ranks", "read_tiktoken_model"]
