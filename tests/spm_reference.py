"""Pure-Python SentencePiece encoder: the reference the kernels in tltok_jit.kernels.sentencepiece are
checked against (normalizer, BPE by score, unigram Viterbi, unknown handling), written straight
from the C++ with no segmenting, no tables and no cache."""

from __future__ import annotations

import heapq
import struct

import numpy as np

from tltok_jit.loaders.sentencepiece_model import BPE, BYTE, NORMAL, UNKNOWN, UNUSED, USER_DEFINED

WS = "\u2581"


def _darts_longest(units, data: bytes):
    node = (units[0] >> 10) << ((units[0] & (1 << 9)) >> 6) if units else 0
    best = None
    for i, c in enumerate(data):
        node ^= c
        if not 0 <= node < len(units):
            break
        u = units[node]
        if (u & (0x80000000 | 0xFF)) != c:
            break
        node ^= (u >> 10) << ((u & (1 << 9)) >> 6)
        if (u >> 8) & 1 and 0 <= node < len(units):
            best = (i + 1, units[node] & 0x7FFFFFFF)
    return best


class Reference:
    def __init__(self, model):
        self.m = model
        blob = model.normalizer.precompiled_charsmap
        if blob:
            (size,) = struct.unpack("<I", blob[:4])
            self.units = list(struct.unpack(f"<{size // 4}I", blob[4:4 + size]))
            self.repl = blob[4 + size:]
        else:
            self.units, self.repl = [], b""
        self.pieces = {p: i for i, (p, t) in enumerate(zip(model.pieces, model.types)) if t in (NORMAL, USER_DEFINED, UNUSED)}
        self.user = sorted((p.encode() for p, i in self.pieces.items() if model.types[i] == USER_DEFINED), key=len)
        self.reserved = {p: i for i, (p, t) in enumerate(zip(model.pieces, model.types))
                         if t not in (NORMAL, USER_DEFINED, UNUSED)}
        self.unk = model.types.index(UNKNOWN)
        self.byte_id = {int(p[3:5], 16): i for i, (p, t) in enumerate(zip(model.pieces, model.types)) if t == BYTE}

    def _user_match(self, data: bytes, pos: int) -> int:
        best = 0
        for u in self.user:
            if data.startswith(u, pos):
                best = max(best, len(u))
        return best

    def _prefix(self, data: bytes, pos: int):
        n = self._user_match(data, pos)
        if n:
            return data[pos:pos + n], n
        hit = _darts_longest(self.units, data[pos:pos + 64]) if self.units else None
        if hit:
            length, value = hit
            return self.repl[value:self.repl.index(b"\0", value)] if b"\0" in self.repl[value:] else self.repl[value:], length
        for n in (1, 2, 3, 4):
            try:
                data[pos:pos + n].decode("utf-8")
                return data[pos:pos + n], n
            except UnicodeDecodeError:
                continue
        return "\ufffd".encode(), 1

    def normalize(self, text: str) -> bytes:
        spec = self.m.normalizer
        data = text.encode()
        pos, out = 0, bytearray()
        ws = WS.encode() if spec.escape_whitespaces else b" "
        if spec.remove_extra_whitespaces:
            while pos < len(data):
                sp, n = self._prefix(data, pos)
                if sp != b" ":
                    break
                pos += n
        if pos >= len(data):
            return b""
        if spec.add_dummy_prefix:
            out += ws
        prev_space = spec.remove_extra_whitespaces
        while pos < len(data):
            sp, n = self._prefix(data, pos)
            while prev_space and sp.startswith(b" "):
                sp = sp[1:]
            if sp:
                out += sp.replace(b" ", ws) if spec.escape_whitespaces else sp
                prev_space = sp.endswith(b" ")
            pos += n
            if not spec.remove_extra_whitespaces:
                prev_space = False
        if spec.remove_extra_whitespaces:
            while out.endswith(ws):
                del out[-len(ws):]
        return bytes(out)

    def _piece_id(self, piece: str) -> int:
        """PieceToId: the reserved pieces (control, unknown, byte) first."""
        return self.reserved.get(piece, self.pieces.get(piece, self.unk))

    def _bpe(self, text: str):
        symbols, frozen, pos = [], [], 0
        data = text.encode()
        while pos < len(data):
            n = self._user_match(data, pos)
            if not n:
                n = len(text[len(data[:pos].decode()):][:1].encode())
            symbols.append(data[pos:pos + n].decode())
            frozen.append(bool(self._user_match(data, pos)))
            pos += n
        heap = []

        def push(i, j):
            if i < 0 or j >= len(symbols) or frozen[i] or frozen[j]:
                return
            merged = symbols[i] + symbols[j]
            if merged in self.pieces:
                heapq.heappush(heap, (-np.float32(self.m.scores[self.pieces[merged]]), i, j, symbols[i], symbols[j]))

        alive = list(range(len(symbols)))
        for i in range(len(symbols) - 1):
            push(i, i + 1)
        nxt = {i: i + 1 for i in range(len(symbols))}
        prv = {i: i - 1 for i in range(len(symbols))}
        while heap:
            _, i, j, a, b = heapq.heappop(heap)
            if symbols[i] != a or symbols[j] != b or nxt.get(i) != j:
                continue
            symbols[i] = a + b
            symbols[j] = None
            nxt[i] = nxt[j]
            if nxt[j] < len(symbols):
                prv[nxt[j]] = i
            push(prv[i], i)
            push(i, nxt[i])
        out, i = [], 0
        while i < len(symbols):
            out.append((symbols[i], self._piece_id(symbols[i])))
            i = nxt[i]
        return out

    def _unigram(self, text: str):
        data = text.encode()
        f = np.float32
        normal = [s for s, t in zip(self.m.scores, self.m.types) if t == NORMAL]
        max_score = f(max([np.finfo(np.float32).tiny] + normal))
        unk_score = f(f(min(normal)) - f(10.0))
        size = len(data)
        best = [(f(0.0), -1, -1)] * (size + 1)  # score, start, id
        starts = sorted({len(text[:k].encode()) for k in range(len(text))})
        for s in starts:
            mblen = len(data[s:].decode(errors="ignore")[:1].encode()) or 1
            single = False
            for e in range(s + 1, size + 1):
                try:
                    piece = data[s:e].decode()
                except UnicodeDecodeError:
                    continue
                pid = self.pieces.get(piece)
                if pid is None or self.m.types[pid] == UNUSED:
                    continue
                score = f(float(f(e - s) * max_score) - 0.1) if self.m.types[pid] == USER_DEFINED else f(self.m.scores[pid])
                cand = f(score + best[s][0])
                if best[e][1] == -1 or cand > best[e][0]:
                    best[e] = (cand, s, pid)
                single = single or e - s == mblen
            if not single:
                cand = f(unk_score + best[s][0])
                if best[s + mblen][1] == -1 or cand > best[s + mblen][0]:
                    best[s + mblen] = (cand, s, self.unk)
        out, e = [], size
        while e > 0:
            _, s, pid = best[e]
            out.append((data[s:e].decode(), pid))
            e = s
        return out[::-1]

    def encode(self, text: str) -> list[int]:
        norm = self.normalize(text).decode()
        pieces = self._bpe(norm) if self.m.model_type == BPE else self._unigram(norm)
        ids, prev_unk = [], False
        for piece, pid in pieces:
            if pid == self.unk and self.m.byte_fallback:
                ids += [self.byte_id[b] for b in piece.encode()]
            elif not (pid == self.unk and prev_unk):
                ids.append(pid)
            prev_unk = pid == self.unk
        return ids
