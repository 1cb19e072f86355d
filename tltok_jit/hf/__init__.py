"""The tokenizer.json runtime: the pipeline a tokenizer.json Encoding runs, its decoder chain, and
the online normalizer used when streaming."""
