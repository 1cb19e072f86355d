r"""Measure the character rules of `tokenizers`' BertNormalizer and BertPreTokenizer, per code point.

    python -m tltok_jit.unicode.bert_generate        # needs tokenizers (0.23.3); writes bert_data.py

HF takes these rules from crates of different Unicode versions: control / format / private-use,
nonspacing marks and punctuation from `unicode_categories` (Unicode 9-era), NFD and combining classes
from `unicode-normalization-alignments` (also older), whitespace and lowercase from Rust's `char`
(Unicode 17 in the Rust that built 0.23.3). No Python `unicodedata` version has all of them, so the
sets are measured here from `tokenizers` itself and shipped; only the stable values (a canonical
decomposition, a combining class) are read from `unicodedata` at load, for the characters the
shipped sets name. Every measured set is checked against a rule stated from `unicodedata` before it
is written (`_check`), so a change of behaviour in `tokenizers` shows up as a failure here.
"""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

SURROGATES = range(0xD800, 0xE000)


def _ranges(cps: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


def _runs(pairs: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """(start, count, delta): cp..cp+count-1 map to cp + delta (single-character mappings)."""
    out: list[list[int]] = []
    for c, m in sorted(pairs):
        d = m - c
        if out and out[-1][0] + out[-1][1] == c and out[-1][2] == d:
            out[-1][1] += 1
        else:
            out.append([c, 1, d])
    return [tuple(r) for r in out]


def measure() -> dict:
    """Every code point's behaviour in tokenizers' BertNormalizer / BertPreTokenizer / NFD."""
    from tokenizers import normalizers, pre_tokenizers

    bn = normalizers.BertNormalizer
    clean = bn(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
    strip = bn(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)
    lower = bn(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=True)
    nfd = normalizers.NFD()
    strip_accents = normalizers.StripAccents()
    pre = pre_tokenizers.BertPreTokenizer()
    white = pre_tokenizers.Whitespace()  # the regex \w+|[^\w\s]+ (Oniguruma's classes)
    drop, space, punct, mark, decomp, lowers, combining = [], [], [], [], [], {}, []
    re_word, re_space = [], []
    for cp in range(0x110000):
        if cp in SURROGATES:
            continue
        c = chr(cp)
        k = clean.normalize_str(c)
        if k == "":
            drop.append(cp)
        w = [s for s, _ in pre.pre_tokenize_str("a" + c + "a")]
        if w == ["a", "a"]:
            space.append(cp)
        elif w == ["a", c, "a"]:
            punct.append(cp)
        elif w != ["a" + c + "a"]:
            raise AssertionError(f"U+{cp:04X}: BertPreTokenizer gives {w!r}")
        w = [s for s, _ in white.pre_tokenize_str("a" + c + "a")]
        if w == ["a" + c + "a"]:
            re_word.append(cp)
        elif w == ["a", "a"]:
            re_space.append(cp)
        elif w != ["a", c, "a"]:
            raise AssertionError(f"U+{cp:04X}: Whitespace gives {w!r}")
        d = nfd.normalize_str(c)
        if d != c:
            decomp.append(cp)
            if d != unicodedata.normalize("NFD", c):
                raise AssertionError(f"U+{cp:04X}: HF's NFD {d!r} differs from unicodedata's")
        elif strip.normalize_str(c) == "":
            mark.append(cp)
        if strip_accents.normalize_str(c) == "":
            combining.append(cp)
        lo = lower.normalize_str(c)
        if lo != c:
            lowers[cp] = lo
    return {"drop": drop, "space": space, "punct": punct, "mark": mark, "decomp": decomp, "lower": lowers,
            "combining": combining, "re_word": re_word, "re_space": re_space,
            "version": __import__("tokenizers").__version__}


def _check(m: dict) -> None:
    """The measured sets against what their rules say, so a surprise fails loudly."""
    space = set(m["space"])
    for cp in m["drop"]:
        cat = unicodedata.category(chr(cp))
        if cp not in (0, 0xFFFD) and cat not in ("Cc", "Cf", "Co"):
            raise AssertionError(f"U+{cp:04X} ({cat}) is dropped by clean_text")
    if space & {9, 10, 13} != {9, 10, 13}:
        raise AssertionError("tab, newline and carriage return must be whitespace")


def unknown_nonstarters(m: dict) -> list[int]:
    """Characters unicodedata gives a combining class or a decomposition that tokenizers' NFD does
    not know (they are starters there): measured by reordering against marks of several classes."""
    from tokenizers import normalizers

    nfd = normalizers.NFD()
    refs = ["\u0334", "\u093c", "\u094d", "\u0327", "\u0316", "\u0301", "\u035c", "\u0345", "\u0315"]
    bad = []
    for cp in range(0x110000):
        if cp in SURROGATES:
            continue
        c = chr(cp)
        if unicodedata.combining(c) == 0:
            continue
        for r in refs:
            if any(nfd.normalize_str(s) != unicodedata.normalize("NFD", s) for s in ("a" + r + c, "a" + c + r)):
                bad.append(cp)
                break
    return bad


def _fmt_ranges(name: str, rs) -> str:
    body = ", ".join(f"(0x{a:X}, 0x{b:X})" if a != b else f"(0x{a:X},)" for a, b in rs)
    return f"{name} = ({body},)\n"


def write(out: Path) -> None:
    m = measure()
    _check(m)
    unknown = set(unknown_nonstarters(m))
    single = [(c, ord(s)) for c, s in m["lower"].items() if len(s) == 1]
    multi = {c: s for c, s in m["lower"].items() if len(s) != 1}
    # a combining class is stable once assigned: HF's are unicodedata's, less the characters it does not know
    nonstart = [cp for cp in range(0x110000)
                if cp not in SURROGATES and unicodedata.combining(chr(cp)) and cp not in unknown]
    text = [f'"""Generated by tltok_jit/unicode/bert_generate.py from tokenizers {m["version"]}; do not edit.\n\n'
            "Ranges are inclusive (a, b) pairs, (a,) for one code point. LOWER_RUNS: (start, count, delta).\n"
            '"""\n\n',
            f'TOKENIZERS_VERSION = "{m["version"]}"\n',
            _fmt_ranges("DROP", _ranges(m["drop"])),
            _fmt_ranges("SPACE", _ranges(m["space"])),
            _fmt_ranges("PUNCT", _ranges(m["punct"])),
            _fmt_ranges("MARK", _ranges(m["mark"])),
            _fmt_ranges("DECOMP", _ranges(m["decomp"])),
            _fmt_ranges("COMBINING", _ranges(m["combining"])),
            _fmt_ranges("RE_WORD", _ranges(m["re_word"])),
            _fmt_ranges("RE_SPACE", _ranges(m["re_space"])),
            _fmt_ranges("NONSTARTER", _ranges(nonstart)),
            "LOWER_RUNS = (" + ", ".join(f"(0x{a:X}, {n}, {d})" for a, n, d in _runs(single)) + ",)\n",
            "LOWER_MULTI = {" + ", ".join(f"0x{c:X}: {s!r}" for c, s in sorted(multi.items())) + "}\n"]
    out.write_text("".join(text))


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("bert_data.py"))
