"""What both commands of the CLI (`tltok encode`, `tltok stream`) share: the one-line user error, the
encoding named by --encoding / --tokenizer, and the --special modes."""

from __future__ import annotations

from pathlib import Path

from ..errors import TltokError


class CliError(TltokError):
    """A user-facing error: printed as one line, exit status 2."""


def load_encoding(name: str | None, tokenizer: str | None):
    import tltok_jit

    if tokenizer:
        p = Path(tokenizer)
        if not p.is_file():
            raise CliError(f"tokenizer file not found: {p}")
        try:
            if p.suffix == ".tiktoken":
                return tltok_jit.Encoding.from_tiktoken_file(p, name=name or p.stem)
            if p.suffix == ".json" and hasattr(tltok_jit, "from_file"):
                cfg = p.with_name("tokenizer_config.json")
                enc = tltok_jit.from_file(p, cfg if cfg.is_file() else None)
                if not isinstance(enc, tltok_jit.Encoding):  # WordPiece, Unigram: a registry kind
                    from .kind_job import KindJob

                    return KindJob(enc, p, cfg if cfg.is_file() else None)
                return enc
        except CliError:
            raise
        except Exception as e:  # noqa: BLE001
            hint = " (change --tokenizer)"
            if p.suffix == ".tiktoken" and not name:
                hint = (" (for a .tiktoken file of another name, pass --encoding NAME to take that encoding's "
                        "split pattern and special tokens)")
            first = str(e).splitlines()[0] if str(e) else ""
            raise CliError(f"cannot load tokenizer {p}: {type(e).__name__}: {first}{hint}") from None
        raise CliError(f"cannot load tokenizer {p}: use a .tiktoken rank file or a tokenizer.json (--tokenizer)")
    name = name or "o200k_base"
    known = tltok_jit.list_encoding_names()
    if name not in known:
        raise CliError(f"unknown encoding {name!r} (--encoding); known encodings: {', '.join(known)}")
    try:
        return tltok_jit.get_encoding(name)
    except Exception as e:  # noqa: BLE001
        raise CliError(f"cannot load encoding {name!r}: {type(e).__name__}: {e}") from None


SPECIAL_MODES = {  # --special MODE -> the allowed / disallowed arguments of encode
    "text": {"allowed_special": set(), "disallowed_special": ()},
    "error": {"allowed_special": set(), "disallowed_special": "all"},
    "allow": {"allowed_special": "all", "disallowed_special": ()},
}


def special_mode(mode: str | None, enc) -> str:
    """--special MODE for `enc`: "text" when not given, but "allow" (the only mode they have) for
    tokenizers that always match their added tokens (WordPiece, Unigram); CliError for another mode."""
    if not getattr(enc, "matches_added_tokens", False):
        return mode or "text"
    if mode not in (None, "allow"):
        raise CliError(f"--special {mode}: this tokenizer ({enc.name}) always matches its added tokens in the "
                       "text, as tokenizers does; leave --special out (or pass --special allow)")
    return "allow"


def special_kwargs(mode: str) -> dict:
    """encode's allowed / disallowed keywords for `--special MODE`; CliError for an unknown mode."""
    try:
        return dict(SPECIAL_MODES[mode])
    except KeyError:
        raise CliError(f"unknown --special mode {mode!r}; use one of {', '.join(SPECIAL_MODES)}") from None
