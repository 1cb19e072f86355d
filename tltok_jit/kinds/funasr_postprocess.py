"""FunASR's `sentence_postprocess` (funasr/utils/postprocess_utils.py, funasr 1.4.16), without timestamps.

A line-for-line port: the odd parts are FunASR's and kept on purpose, e.g. `isChinese` compares whole
strings (so digits and "@" count as Chinese), a pending "@@" piece waits across Chinese tokens for
the next English word (["hel@@", "你", "lo"] -> "你hello") and is lost at the end, and runs of single
ASCII letters separated by word breaks are joined and upper-cased.

`PostprocessStream` is the same rendering one token at a time, for streaming decode: it settles text
as soon as no later token can change it, at O(1) per token.
"""

from __future__ import annotations

__all__ = ["PostprocessStream", "is_all_alpha", "is_all_chinese", "mode_stable", "sentence_postprocess", "token_class"]

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


# --------------------------------------------------------------------------- one token at a time

CHINESE, PIECE, WORD, OTHER = range(4)  # how the mixed mode's loop reads a token
MIXED, ALL_CHINESE, ALL_ALPHA = range(3)
_IDLE, _LETTER, _LETTER_SPACE, _ABBR, _ABBR_SPACE = range(5)  # what the abbreviation rule holds


def token_class(t: str) -> int:
    """How the mixed mode of `sentence_postprocess` reads token `t`."""
    if is_all_chinese(t):
        return CHINESE
    if "@@" in t:
        return PIECE
    if is_all_alpha(t):
        return WORD
    return OTHER


def mode_stable(t: str) -> bool:
    """Whether `t` renders alike in every mode a list of it may take (all Chinese, all alphabetic,
    mixed), so that a list of such tokens renders alike in all of them."""
    if " " in t or any(w in t for w in _WASHED):
        return False
    c = token_class(t)
    if is_all_chinese([t]) and c not in (CHINESE, OTHER):
        return False
    return not is_all_alpha([t]) or c == WORD


def _joined(chain) -> str:
    """The parts of a chain of (earlier parts, last part) pairs, joined in order."""
    parts = []
    while chain is not None:
        chain, part = chain
        parts.append(part)
    parts.reverse()
    return "".join(parts)


class _Render:
    """`sentence_postprocess` in one mode, fed one token at a time. `out` is a chain of the text no
    later token changes (what the mode's loop, the abbreviation rule and the final strip settle)."""

    __slots__ = ("mode", "piece", "alpha_blank", "last", "abbr", "letter", "started", "space", "out")

    def __init__(self, mode: int):
        self.mode = mode
        self.piece = None         # chain of the pending "@@" pieces (word_item)
        self.alpha_blank = False
        self.last = None          # the last entry while a Chinese token may still pop it
        self.abbr = _IDLE
        self.letter = ""          # the single letter the abbreviation rule holds
        self.started = False      # the leading strip is over
        self.space = None         # chain of trailing whitespace the final strip may remove
        self.out = None

    def copy(self) -> "_Render":
        r = _Render.__new__(_Render)
        for name in _Render.__slots__:
            setattr(r, name, getattr(self, name))
        return r

    def feed(self, t: str, cls: int) -> None:
        mode = self.mode
        if mode == ALL_CHINESE:
            self._entry(t.replace(" ", ""))
        elif mode == ALL_ALPHA:
            if "@@" in t:
                self.piece = (self.piece, t.replace("@@", ""))
            else:
                self._word(t)
                self._entry(" ")
        elif cls == CHINESE:
            if self.alpha_blank:
                self.last = None  # popped
            self.alpha_blank = False
            self._commit()
            self._entry(t)
        elif cls == PIECE:
            self.piece = (self.piece, t.replace("@@", ""))
            self.alpha_blank = False
            self._commit()
        elif cls == WORD:
            self._commit()
            self._word(t)
            self.last = " "
            self.alpha_blank = True
        else:
            self._commit()
            if self.alpha_blank:
                self.last = t
            else:
                self._entry(t)

    def finish(self) -> None:
        """The end of the list: what is held settles, a pending "@@" piece is lost."""
        self._commit()
        self.piece = None
        held = self.abbr
        if held in (_LETTER, _LETTER_SPACE):
            self._emit(self.letter)
        if held in (_LETTER_SPACE, _ABBR_SPACE):
            self._emit(" ")
        self.abbr = _IDLE
        self.space = None  # the final strip's

    def take(self) -> str:
        text = _joined(self.out)
        self.out = None
        return text

    def _word(self, t: str) -> None:
        if self.piece is not None:
            t = _joined(self.piece) + t
            self.piece = None
        self._entry(t)

    def _commit(self) -> None:
        if self.last is not None:
            last, self.last = self.last, None
            self._entry(last)

    def _entry(self, w: str) -> None:
        """A word_lists entry no later token removes, through the abbreviation rule: a run of single
        ASCII letters with " " entries between them is one upper-cased word."""
        letter = len(w) == 1 and w.encode("utf-8").isalpha()
        state = self.abbr
        if state == _LETTER:
            if w == " ":
                self.abbr = _LETTER_SPACE
                return
            self._emit(self.letter)
        elif state == _LETTER_SPACE:
            if letter:
                self._emit(self.letter.upper() + w.upper())
                self.abbr = _ABBR
                return
            self._emit(self.letter)
            self._emit(" ")
        elif state == _ABBR:
            if w == " ":
                self.abbr = _ABBR_SPACE
                return
        elif state == _ABBR_SPACE:
            if letter:
                self._emit(w.upper())
                self.abbr = _ABBR
                return
            self._emit(" ")
        if letter:
            self.abbr = _LETTER
            self.letter = w
        else:
            self.abbr = _IDLE
            self._emit(w)

    def _emit(self, s: str) -> None:
        """Text after the abbreviation rule, through the final strip."""
        if not self.started:
            s = s.lstrip()
            if not s:
                return
            self.started = True
        visible = s.rstrip()
        if not visible:
            self.space = (self.space, s)
            return
        tail = s[len(visible):]
        if self.space is not None:
            visible = _joined(self.space) + visible
        self.space = (None, tail) if tail else None
        self.out = (self.out, visible)


class PostprocessStream:
    """`sentence_postprocess` over tokens fed one at a time (washed names and dropped ids left out
    by the caller): `feed` each, then `take()` the text settled since the last take.

    The mode (all Chinese, all alphabetic, mixed) is read from the whole list. With
    `mode_stable` tokens only, every mode renders alike and the mixed one's text is settled as it
    comes; otherwise each mode still possible is rendered, and none is settled until only the mixed
    one is left or the list ends. Each token costs O(1) amortized: the parts held back (a pending
    "@@" word, trailing whitespace) are chains joined once."""

    __slots__ = ("renders", "chinese", "alpha", "empty")

    def __init__(self, stable: bool):
        self.renders = [_Render(MIXED)] if stable else [_Render(MIXED), _Render(ALL_CHINESE), _Render(ALL_ALPHA)]
        self.chinese = self.alpha = not stable  # modes still possible besides mixed
        self.empty = True

    def copy(self) -> "PostprocessStream":
        c = PostprocessStream.__new__(PostprocessStream)
        c.renders = [r.copy() for r in self.renders]
        c.chinese, c.alpha, c.empty = self.chinese, self.alpha, self.empty
        return c

    def feed(self, t: str, cls: int, chinese: bool, alpha: bool) -> None:
        """Token `t`; `cls` is token_class(t), `chinese` / `alpha` whether a list of it alone is all
        Chinese / all alphabetic."""
        self.empty = False
        for r in self.renders:
            r.feed(t, cls)
        if self.chinese or self.alpha:
            self.chinese = self.chinese and chinese
            self.alpha = self.alpha and alpha
            self.renders = [r for r in self.renders if r.mode == MIXED or (self.chinese if r.mode == ALL_CHINESE
                                                                             else self.alpha)]

    def take(self, final: bool = False) -> str:
        """The text settled since the last call; with `final` the list ends (all of it)."""
        if final:
            mode = MIXED if self.empty else ALL_CHINESE if self.chinese else ALL_ALPHA if self.alpha else MIXED
            self.renders = [r for r in self.renders if r.mode == mode]
            self.chinese = self.alpha = False
            self.renders[0].finish()
        elif self.chinese or self.alpha:
            return ""
        return self.renders[0].take()
