"""The plain description of a model every loader produces: ranks, added tokens, split patterns,
the tokenizer.json stages, and the known encodings by name."""
