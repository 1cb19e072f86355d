"""File-format readers. Every loader returns a `tltok_jit.model.description.ModelDescription` and raises
`tltok_jit.model.description.TokenizerFileError` (naming the file and the line or field) on malformed input."""

from .tiktoken_file import load_tiktoken_ranks, read_tiktoken_model

__all__ = ["load_tiktoken_ranks", "read_tiktoken_model"]
