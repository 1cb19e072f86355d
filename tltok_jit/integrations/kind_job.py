"""A WordPiece or Unigram tokenizer.json (a registry-kind tokenizer, not an `Encoding`) behind what
`tltok encode` calls on an encoding: Arrow columns in, ids or counts out, rows cut to --max-length.

These tokenizers match their added tokens in the text, as `tokenizers` does, so `--special allow` is
the only mode they have (the CLI takes it as their default and refuses the others by name). Their
kernels ship compiled with the package and run in the job's own process."""

from __future__ import annotations

from pathlib import Path

__all__ = ["KindJob", "load_kind_job"]


def load_kind_job(path: str, config: str | None) -> "KindJob":
    """The job interface of the tokenizer.json at `path` (a WordPiece or Unigram file)."""
    import tltok_jit

    return KindJob(tltok_jit.from_file(path, config), path, config)


class KindJob:
    """`tok` (a `tltok_jit.tokenizer.Tokenizer` with Arrow columns) with the attributes and calls the
    encode job uses; pickles by its file paths (for Ray workers)."""

    compile_state = "compiled"  # nothing compiles in the background: no Python encoder stands in
    compile_stages: tuple = ()
    pattern_kind = None
    matches_added_tokens = True

    def __init__(self, tok, path, config=None):
        self.tok = tok
        self.path = str(path)
        self.config = None if config is None else str(config)
        self.name = tok.name if getattr(tok, "name", None) else Path(self.path).parent.name

    @property
    def n_vocab(self) -> int:
        return self.tok.vocab_size

    @property
    def eot_token(self) -> int:
        raise KeyError("<|endoftext|>")  # these vocabularies have no end-of-text token

    def encode_arrow(self, column, *, num_threads: int = 0, large_list: bool | None = None,
                     max_length: int | None = None, truncation_side: str = "right", **special):
        """The ids of every row (nulls stay null), each row cut to `max_length` ids when given."""
        res = self.tok.encode_arrow(column, num_threads=num_threads or None, large_list=large_list)
        if max_length is not None:
            from ..padding import truncate_lists

            res = truncate_lists(res, max_length, truncation_side)
        return res

    def count_arrow(self, column, *, num_threads: int = 0, **special):
        return self.tok.count_arrow(column, num_threads=num_threads or None)

    def __reduce__(self):
        return load_kind_job, (self.path, self.config)
