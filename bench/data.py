"""Benchmark inputs: corpora, document splits, worst cases, short strings.

One job: turn the files in shared/ (and the CPython stdlib) into the exact,
deterministic texts that every library is timed on.  Nothing here touches a
tokenizer.

Sizes are in bytes of UTF-8; "MB" in every report means 10**6 bytes of UTF-8
input text.
"""

from __future__ import annotations

import os
import random
import sysconfig
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    """shared/ sits beside the project root (../shared); BENCH_SHARED overrides."""
    env = os.environ.get("BENCH_SHARED")
    if env:
        return Path(env)
    for cand in (REPO_ROOT.parent / "shared", Path("/work/shared")):
        if cand.is_dir():
            return cand
    raise FileNotFoundError(
        "shared/ not found beside the project root (looked at ../shared and /work/shared); "
        "set BENCH_SHARED=/path/to/shared"
    )


def corpora_dir() -> Path:
    return shared_dir() / "corpora"


def tokenizers_dir() -> Path:
    return shared_dir() / "tokenizers"


# ---------------------------------------------------------------------------
# corpora


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def cut_at_line(text: str, max_bytes: int | None) -> str:
    """The longest prefix of `text` that ends at a line end and is at most
    `max_bytes` bytes of UTF-8 (the whole text when max_bytes is None)."""
    if max_bytes is None or len(text.encode("utf-8")) <= max_bytes:
        return text
    prefix = text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")
    nl = prefix.rfind("\n")
    return prefix[: nl + 1] if nl >= 0 else prefix


def code_corpus(target_bytes: int = 3_000_000) -> str:
    """CPython stdlib `.py` files, concatenated in sorted relative-path order
    until at least `target_bytes` bytes.  Skipped: site-packages, any path with
    a `test`/`tests`/`idlelib` component (test data deliberately holds odd
    encodings), and files that are not valid UTF-8.  Whole files only."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = {"site-packages", "test", "tests", "idlelib", "__pycache__"}
    files = sorted(
        p for p in root.rglob("*.py") if not (set(p.relative_to(root).parts[:-1]) & skip)
    )
    parts: list[str] = []
    total = 0
    for p in files:
        try:
            s = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(s if s.endswith("\n") else s + "\n")
        total += len(parts[-1].encode("utf-8"))
        if total >= target_bytes:
            break
    return "".join(parts)


# UDHR translations in scripts of 3-byte characters with long, rarely whole-token pieces: Sanskrit
# (Devanagari), Gujarati, Lao, Dzongkha (Tibetan)
SCRIPT_FILES = ("sa", "gu", "lo", "dz")
WARMUP_CHARS = 1500  # of each UDHR translation, in warmup_text


def scripts_corpus() -> str:
    """The SCRIPT_FILES translations after their first WARMUP_CHARS characters (warmup_text's part of
    them), whole lines only: ~103 KB no warm-up has seen."""
    parts = []
    for name in SCRIPT_FILES:
        text = _read(corpora_dir() / "udhr" / f"{name}.txt")
        rest = text[WARMUP_CHARS:]
        parts.append(rest[rest.find("\n") + 1:])
    return "".join(parts)


def corpus(name: str, max_bytes: int | None = None) -> str:
    """english | code | chinese | scripts, optionally cut to a line-aligned prefix."""
    if name == "english":
        text = _read(corpora_dir() / "english-war-and-peace.txt")
    elif name == "chinese":
        text = _read(corpora_dir() / "chinese-sanguo-yanyi.txt")
    elif name == "code":
        text = code_corpus()
    elif name == "scripts":
        text = scripts_corpus()
    else:
        raise ValueError(f"unknown corpus {name!r}")
    return cut_at_line(text, max_bytes)


CORPORA = ("english", "code", "chinese", "scripts")


def warmup_text(max_chars_per_file: int = WARMUP_CHARS) -> str:
    """Text none of the timed inputs contains: the first `max_chars_per_file`
    characters of each UDHR translation (106 languages/scripts, sorted by
    file name) plus the first 20,000 characters of the emoji test file.  Used
    to JIT-compile / page in every library's code paths before the timed call
    without pre-filling any pretoken cache with the target text."""
    udhr = sorted((corpora_dir() / "udhr").glob("*.txt"))
    parts = [_read(p)[:max_chars_per_file] for p in udhr]
    parts.append(_read(corpora_dir() / "emoji-test.txt")[:20_000])
    return "\n".join(parts)


# ---------------------------------------------------------------------------
# derived inputs


def split_docs(text: str, min_doc_bytes: int = 1024) -> list[str]:
    """Split at line boundaries into documents: lines are accumulated until a
    document holds at least `min_doc_bytes` bytes, so documents are ~1-2 KB
    (a document is longer only when one line is).  "".join(docs) == text."""
    docs: list[str] = []
    cur: list[str] = []
    size = 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        size += len(line.encode("utf-8"))
        if size >= min_doc_bytes:
            docs.append("".join(cur))
            cur, size = [], 0
    if cur:
        docs.append("".join(cur))
    return docs


def worst_random_letters(n: int = 1_000_000, seed: int = 1234) -> str:
    """n random lowercase ASCII letters, no spaces: one giant pretoken."""
    rng = random.Random(seed)
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=n))


def worst_repeated_a(n: int = 1_000_000) -> str:
    return "a" * n


def short_strings(n: int = 100_000, length: int = 20) -> list[str]:
    """n consecutive `length`-character slices of the English corpus (taken
    from its start, wrapping around if needed): realistic ~20-char strings,
    each one a separate encode call."""
    text = corpus("english")
    need = n * length
    if len(text) < need:
        text = text * (need // len(text) + 1)
    return [text[i * length : (i + 1) * length] for i in range(n)]


def memory_text(target_bytes: int = 100_000_000) -> tuple[str, int]:
    """The English corpus repeated whole until it is at least `target_bytes`
    bytes; returns (text, number of copies)."""
    base = corpus("english")
    nb = len(base.encode("utf-8"))
    copies = -(-target_bytes // nb)
    return base * copies, copies
