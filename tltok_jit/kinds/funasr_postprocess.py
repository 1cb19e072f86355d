"""FunASR's `sentence_postprocess` (funasr/utils/postprocess_utils.py, funasr 1.4.16), without timestamps.

A line-for-line port: the odd parts are FunASR's and kept on purpose, e.g. `isChinese` compares whole
strings (so digits and "@" count as Chinese), a pending "@@" piece waits across Chinese tokens for
the next English word (["hel@@", "你", "lo"] -> "你hello") and is lost at the end, and runs of single
ASCII letters separated by word breaks are joined and upper-cased.
"""

from __future__ import annotations

__all__ = ["is_all_alpha", "is_all_chinese", "sentence_postprocess"]

_WASHED = ("<s>", "</s>", "<unk>", "<OOV>")


def _is_chinese(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff" or "\u0030" <= ch <= "\u0039" or ch == "@"


def _cleaned(word) -> list[str]:
    out = []
    for i in word:  # a list of tokens, or the characters of one token
        cur = i.replace(" ", "").replace("</s>", "").replace("<s>", "").replace("<unk>", "").replace("<OOV>", "")
        out.append(cur)
    return out


def is_all_chinese(word) -> bool:
    cleaned = _cleaned(word)
    return bool(cleaned) and all(_is_chinese(ch) for ch in cleaned)


def is_all_alpha(word) -> bool:
    cleaned = _cleaned(word)
    if not cleaned:
        return False
    for ch in cleaned:
        if ch.isalpha() is False and ch != "'":
            return False
        if ch.isalpha() is True and _is_chinese(ch) is True:
            return False
    return True


def _single_ascii_letter(w: str) -> bool:
    return len(w) == 1 and w.encode("utf-8").isalpha()


def _abbr_dispose(words: list[str]) -> list[str]:
    n = len(words)
    abbr_begin: list[int] = []
    abbr_end: list[int] = []
    last_num = -1
    for num in range(n):
        if num <= last_num:
            continue
        if _single_ascii_letter(words[num]):
            if num + 1 < n and words[num + 1] == " " and num + 2 < n and _single_ascii_letter(words[num + 2]):
                abbr_begin.append(num)
                num += 2
                abbr_end.append(num)
                while True:
                    num += 1
                    if num < n and words[num] == " ":
                        num += 1
                        if num < n and _single_ascii_letter(words[num]):
                            abbr_end.pop()
                            abbr_end.append(num)
                            last_num = num
                        else:
                            break
                    else:
                        break
    out: list[str] = []
    last_num = -1
    for num in range(n):
        if num <= last_num:
            continue
        if num in abbr_begin:
            abbr_word = words[num].upper()
            num += 1
            while num < n:
                if num in abbr_end:
                    abbr_word += words[num].upper()
                    last_num = num
                    break
                if words[num].encode("utf-8").isalpha():
                    abbr_word += words[num].upper()
                num += 1
            out.append(abbr_word)
        else:
            out.append(words[num])
    return out


def sentence_postprocess(words: list[str]) -> str:
    """The sentence FunASR's `sentence_postprocess(words)` returns (its first element)."""
    middle = [w for w in words if w not in _WASHED]
    word_lists: list[str] = []
    word_item = ""
    if is_all_chinese(middle):
        word_lists = [ch.replace(" ", "") for ch in middle]
    elif is_all_alpha(middle):
        for ch in middle:
            if "@@" in ch:
                word_item += ch.replace("@@", "")
            else:
                word_item += ch
                word_lists.append(word_item)
                word_lists.append(" ")
                word_item = ""
    else:
        alpha_blank = False
        for ch in middle:
            if is_all_chinese(ch):
                if alpha_blank is True:
                    word_lists.pop()
                word_lists.append(ch)
                alpha_blank = False
            elif "@@" in ch:
                word_item += ch.replace("@@", "")
                alpha_blank = False
            elif is_all_alpha(ch):
                word_item += ch
                word_lists.append(word_item)
                word_lists.append(" ")
                word_item = ""
                alpha_blank = True
            else:
                word_lists.append(ch)
    return "".join(_abbr_dispose(word_lists)).strip()
