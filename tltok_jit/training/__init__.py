"""Training byte-level BPE vocabularies equal to Hugging Face `tokenizers`' `BpeTrainer` (see `bpe`)."""

from __future__ import annotations

from .bpe import TrainedEncoding, train_bpe
from .save import save_tiktoken, save_tokenizer_json

__all__ = ["TrainedEncoding", "save_tiktoken", "save_tokenizer_json", "train_bpe"]
