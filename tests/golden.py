"""Frozen oracle vectors in `fixtures/golden/`: their format, and the oracle calls that produce them.

gzip-compressed JSON lines. `texts.jsonl.gz` holds the texts, one `{"cat": category, "text": text}` a
line (`"codepoints": [...]` instead of `"text"` for a text with lone surrogates: JSON would read the
escapes of a surrogate pair back as one astral character); each tokenizer's file (`<name>.jsonl.gz`) has a header line naming the oracle, its version, the
sha256 of the tokenizer file and of the texts file's decompressed content, then one line per text of what
the oracle gives for it, in the texts' order. Optional fields are present only where they differ from
the field they default to, which keeps the files small.

tiktoken (r50k_base, also gpt2; cl100k_base; o200k_base), from the rank files embedded in the package:
    ids      encode_ordinary(text)
    special  encode(text, allowed_special="all")            default: ids
    decoded  decode(ids)                                     default: text

Hugging Face `tokenizers` (gpt2 and smollm2: their tokenizer.json in the shared folder, see HF_FILES;
texts with lone surrogates are left out, `tokenizers` cannot take them):
    ids           encode(text, add_special_tokens=False).ids
    with_special  encode(text, add_special_tokens=True).ids  default: ids
    decoded       decode(ids, skip_special_tokens=False)     default: text
    decoded_skip  decode(ids, skip_special_tokens=True)      default: decoded

This module imports neither pytest nor tltok_jit's encoders, so `fixtures/make_golden.py` can use it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import types
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
GOLDEN_DIR = FIXTURES / "golden"
FORMAT = "tltok-golden/1"

TIKTOKEN_NAMES = ["r50k_base", "cl100k_base", "o200k_base"]
# tokenizer.json files, relative to the shared folder (read from there, never copied into the repository)
HF_FILES = {"gpt2": "tokenizers/gpt2/tokenizer.json", "smollm2": "tokenizers/smollm2/tokenizer.json"}


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.jsonl.gz"


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def has_surrogates(s: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in s)


# ---------------------------------------------------------------------------------------- file format


TEXTS_PATH = GOLDEN_DIR / "texts.jsonl.gz"


def _jsonl(rows: list[dict]) -> bytes:
    # ensure_ascii (the default): lone surrogates survive as \\udxxx escapes
    return "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in rows).encode("ascii")


def _write_gz(path: Path, data: bytes) -> None:
    # mtime 0 and no file name: regenerating unchanged vectors changes no byte, `git diff` shows real changes
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))


def _text_row(cat: str, text: str) -> dict:
    if has_surrogates(text):
        return {"cat": cat, "codepoints": [ord(c) for c in text]}
    return {"cat": cat, "text": text}


def _from_row(row: dict) -> dict:
    if "codepoints" in row:
        return {"cat": row["cat"], "text": "".join(map(chr, row["codepoints"]))}
    return row


def write_golden(name: str, header: dict, records: list[dict]) -> None:
    """Write the texts file from records' cat/text (it must be the same for every tokenizer written
    together) and `<name>.jsonl.gz` from the rest of each record."""
    texts = _jsonl([_text_row(r["cat"], r["text"]) for r in records])
    if name in TIKTOKEN_NAMES or not TEXTS_PATH.exists():
        if not TEXTS_PATH.exists() or gzip.decompress(TEXTS_PATH.read_bytes()) != texts:
            _write_gz(TEXTS_PATH, texts)
    head = {"format": FORMAT, **header, "texts_sha256": hashlib.sha256(texts).hexdigest()}
    body = [{k: v for k, v in r.items() if k not in ("cat", "text")} for r in records]
    _write_gz(golden_path(name), _jsonl([head]) + _jsonl(body))


def read_texts() -> list[dict]:
    """The frozen texts: [{"cat": ..., "text": ...}]."""
    lines = gzip.decompress(TEXTS_PATH.read_bytes()).decode("ascii").splitlines()
    return [_from_row(json.loads(line)) for line in lines]


def read_golden(name: str) -> tuple[dict, list[dict]]:
    """(header, records) of fixtures/golden/<name>.jsonl.gz, each record with its "cat" and "text".

    HF files leave out the texts with lone surrogates, so their records pair with the texts without them.
    Raises ValueError naming the file if it does not fit the texts file."""
    path = golden_path(name)
    lines = gzip.decompress(path.read_bytes()).decode("ascii").splitlines()
    header = json.loads(lines[0])
    if header.get("format") != FORMAT:
        raise ValueError(f"{path}: format {header.get('format')!r}, expected {FORMAT!r}")
    texts = read_texts()
    if name not in TIKTOKEN_NAMES:
        texts = [t for t in texts if not has_surrogates(t["text"])]
    want = hashlib.sha256(_jsonl([_text_row(t["cat"], t["text"]) for t in texts])).hexdigest()
    if header.get("texts_sha256") != want or len(lines) - 1 != len(texts):
        raise ValueError(f"{path}: made for other texts than {TEXTS_PATH} (texts_sha256 {header.get('texts_sha256')}, "
                         f"the texts file gives {want}; {len(lines) - 1} records for {len(texts)} texts): "
                         f"run fixtures/make_golden.py")
    return header, [{**t, **json.loads(line)} for t, line in zip(texts, lines[1:])]


# ---------------------------------------------------------------------------------------- oracle calls


def tiktoken_record(enc, cat: str, text: str) -> dict:
    """What a tiktoken.Encoding gives for one text, in the frozen form."""
    ids = enc.encode_ordinary(text)
    rec = {"cat": cat, "text": text, "ids": ids}
    special = enc.encode(text, allowed_special="all")
    if special != ids:
        rec["special"] = special
    decoded = enc.decode(ids)
    if decoded != text:
        rec["decoded"] = decoded
    return rec


def hf_record(tok, cat: str, text: str) -> dict:
    """What a tokenizers.Tokenizer gives for one text, in the frozen form."""
    ids = tok.encode(text, add_special_tokens=False).ids
    rec = {"cat": cat, "text": text, "ids": ids}
    with_special = tok.encode(text, add_special_tokens=True).ids
    if with_special != ids:
        rec["with_special"] = with_special
    decoded = tok.decode(ids, skip_special_tokens=False)
    if decoded != text:
        rec["decoded"] = decoded
    decoded_skip = tok.decode(ids, skip_special_tokens=True)
    if decoded_skip != decoded:
        rec["decoded_skip"] = decoded_skip
    return rec


def tiktoken_params(name: str) -> dict:
    """The constructor dict of tiktoken_ext.openai_public.<name>, without loading any ranks.

    The constructor's code is run against a copy of its module globals in which the rank loaders
    are stubs returning {}, so nothing is downloaded and the module itself is not modified; the
    pat_str and special tokens are exactly tiktoken's own."""
    import tiktoken_ext.openai_public as op

    fn = getattr(op, name)
    g = dict(fn.__globals__)
    g["load_tiktoken_bpe"] = lambda *a, **k: {}
    g["data_gym_to_mergeable_bpe_ranks"] = lambda *a, **k: {}
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)()


def build_tiktoken_oracle(name: str, rank_file: Path):
    """tiktoken's own Encoding `name`, its ranks parsed by tiktoken from a local rank file."""
    import tiktoken
    import tiktoken.load

    params = tiktoken_params(name)
    params["mergeable_ranks"] = tiktoken.load.load_tiktoken_bpe(str(rank_file))
    return tiktoken.Encoding(**params)


def write_embedded_rank_file(stem: str, dest_dir: Path) -> Path:
    """Write the package's embedded copy of `<stem>.tiktoken` (sha256-checked by the registry) into
    dest_dir and return its path; LookupError if the package embeds no copy of it."""
    from tltok_jit.loaders.known_encodings import embedded_rank_data

    data = embedded_rank_data(stem)
    if data is None:
        raise LookupError(f"the package embeds no copy of {stem}.tiktoken")
    path = dest_dir / f"{stem}.tiktoken"
    if not path.is_file() or path.read_bytes() != data:
        dest_dir.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return path
