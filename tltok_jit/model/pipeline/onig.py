"""Oniguruma patterns (the syntax `tokenizers` compiles Split patterns with) on the `regex` module:
the translation (`onig_to_python`, `compile_onig`) and Oniguruma's match iteration (`onig_find_iter`)."""

from __future__ import annotations

__all__ = ["compile_onig", "onig_find_iter", "onig_to_python"]


def onig_find_iter(compiled, s: str):
    """(start, end) of the matches `tokenizers`' Split finds: leftmost-first matches resuming at the
    end of the previous one, an empty match ending where the previous match ended is dropped (the
    search moves one character on). Python's `finditer` keeps such an empty match after a
    non-empty one (e.g. `(?=a)|b` on "ba"), and empty matches still split."""
    n = len(s)
    pos = 0
    last_end = -1
    while pos <= n:
        m = compiled.search(s, pos)
        if m is None:
            return
        a, e = m.span()
        if a == e and e == last_end:
            pos += 1
            continue
        pos = last_end = e
        yield a, e


_ONIG_FLAGS = {"i": "i", "m": "s", "x": "x", "-": "-"}  # Oniguruma's (?m) is dot-all


def onig_to_python(pat: str) -> str:
    """An Oniguruma pattern (the syntax `tokenizers` compiles Split patterns with) as a `regex` module
    pattern with the same matches: `^` / `$` are line anchors there, `\\Z` also matches before a final
    newline, `\\z` is the end, `(?m)` is dot-all, `\\h` is a hex digit, `\\x{...}` a code point.
    ValueError for constructs with no safe translation (nested classes, `&&`, other group flags)."""
    out: list[str] = []
    i, n = 0, len(pat)
    in_class = False
    while i < n:
        c = pat[i]
        if c == "\\":
            if i + 1 >= n:
                raise ValueError("pattern ends with a backslash")
            d = pat[i + 1]
            if d == "x" and pat.startswith("{", i + 2):
                j = pat.find("}", i)
                try:
                    cp = int(pat[i + 3:j], 16)
                except ValueError:
                    raise ValueError(f"bad escape {pat[i:j + 1]!r}") from None
                out.append(f"\\U{cp:08x}")
                i = j + 1
                continue
            if d in "pP" and pat.startswith("{", i + 2):
                j = pat.find("}", i)
                if j < 0:
                    raise ValueError("unterminated \\p{")
                out.append(pat[i:j + 1])
                i = j + 1
                continue
            if d == "h":
                out.append("0-9a-fA-F" if in_class else "[0-9a-fA-F]")
            elif d == "H" and not in_class:
                out.append("[^0-9a-fA-F]")
            elif d == "z" and not in_class:
                out.append("\\Z")
            elif d == "Z" and not in_class:
                out.append("(?=\\n?\\Z)")
            elif d in "HzZ":
                raise ValueError(f"\\{d} inside a character class")
            else:
                out.append(pat[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "[":
                if not pat.startswith("[:", i):
                    raise ValueError("nested character classes")
                j = pat.find(":]", i)
                if j < 0:
                    raise ValueError("unterminated POSIX bracket")
                out.append(pat[i:j + 2])
                i = j + 2
                continue
            if pat.startswith("&&", i):
                raise ValueError("character-class intersection (&&)")
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if pat.startswith("^", i):
                out.append("^")
                i += 1
            if pat.startswith("]", i):  # a leading ] is literal
                out.append("\\]")
                i += 1
            continue
        if c == "^":
            out.append("(?m:^)")
        elif c == "$":
            out.append("(?m:$)")
        elif c == "(" and pat.startswith("(?", i) and i + 2 < n and (pat[i + 2].isalpha() or pat[i + 2] == "-"):
            j = i + 2
            while j < n and pat[j] in _ONIG_FLAGS:
                j += 1
            if j >= n or pat[j] not in ":)":
                raise ValueError(f"group option {pat[i:j + 1]!r}")
            flags = "".join(_ONIG_FLAGS[f] for f in pat[i + 2:j])
            out.append("(?" + flags + pat[j])
            i = j + 1
            continue
        else:
            out.append(c)
        i += 1
    if in_class:
        raise ValueError("unterminated character class")
    return "".join(out)


def compile_onig(pat: str):
    """`regex` compiled form of an Oniguruma pattern (see onig_to_python); ValueError if unsupported."""
    import regex

    py = onig_to_python(pat)
    try:
        return regex.compile(py)
    except regex.error as e:
        raise ValueError(f"the regex module rejects it: {e}") from None
