"""A pure-Python replay of Hugging Face `tokenizers`' BpeTrainer (models/bpe/trainer.rs, Word::merge in
word.rs), written from its source line by line: the oracle `tltok_jit.kernels.train_bpe.train` is
checked against, and what is checked against HF first.

`train_reference(word_counts, vocab_size, ...)` takes byte-level word strings -> counts (what the
trainer's `feed` collects) and returns (vocab: str -> id, merges: [((left id, right id), new id)] with
repeats, as HF's `merges` Vec before it becomes a map)."""

from __future__ import annotations

import heapq

from tltok_jit.model.byte_alphabet import BYTE_TO_CHAR

_U64 = 1 << 64


def train_reference(word_counts: dict[str, int], vocab_size: int, *, special_tokens=(), min_frequency: int = 0,
                    max_token_length: int | None = None):
    max_len = max_token_length if max_token_length is not None else float("inf")
    w2id: dict[str, int] = {}
    id2w: list[str] = []
    for t in special_tokens:  # add_special_tokens
        if t not in w2id:
            id2w.append(t)
            w2id[t] = len(id2w) - 1
    alphabet = set(BYTE_TO_CHAR.values())  # initial_alphabet = ByteLevel.alphabet()
    for w in word_counts:
        alphabet.update(w)
    for c in sorted(alphabet):  # compute_alphabet: sorted by code point
        if c not in w2id:
            id2w.append(c)
            w2id[c] = len(id2w) - 1
    words = []  # tokenize_words: [symbol id, length] lists
    counts = []
    for w, c in word_counts.items():
        words.append([[w2id[ch], 1] for ch in w])
        counts.append(c)
    pair_counts: dict[tuple[int, int], int] = {}  # count_pairs
    where: dict[tuple[int, int], set[int]] = {}
    for i, word in enumerate(words):
        for (x, _), (y, _) in zip(word, word[1:]):
            pair_counts[(x, y)] = pair_counts.get((x, y), 0) + counts[i]
            where.setdefault((x, y), set()).add(i)
    age = 0
    queue = []  # max count, then smallest pair, then oldest entry
    for pair in sorted(where):
        if pair_counts[pair] > 0:
            heapq.heappush(queue, (-pair_counts[pair], pair, age, where[pair]))
            age += 1
    merges = []
    while len(w2id) < vocab_size:
        if not queue:
            break
        neg, pair, _, pos = heapq.heappop(queue)
        count = -neg
        if count != pair_counts[pair] % _U64:  # `pair_counts[&pair] as u64`: a negative count wraps
            heapq.heappush(queue, (-(pair_counts[pair] % _U64), pair, age, pos))
            age += 1
            continue
        if count < 1 or min_frequency > count:
            break
        new_token = id2w[pair[0]] + id2w[pair[1]]
        new_id = w2id.get(new_token, len(id2w))
        if new_token not in w2id:
            id2w.append(new_token)
            w2id[new_token] = new_id
        merges.append((pair, new_id))
        changes = []
        for i in pos:
            changes.extend((c, i) for c in _merge_word(words[i], pair[0], pair[1], new_id, max_len))
        where = {}
        for (p, change), i in changes:
            pair_counts[p] = pair_counts.get(p, 0) + change * counts[i]
            if change > 0:
                where.setdefault(p, set()).add(i)
        for p in sorted(where):
            if pair_counts[p] > 0:
                heapq.heappush(queue, (-pair_counts[p], p, age, where[p]))
                age += 1
    return w2id, merges


def _merge_word(symbols, c1, c2, replacement, max_length):
    """Word::merge: symbols is a list of [id, length]; returns [((a, b), +-1)]."""
    changes = []
    i = 0
    while i < len(symbols):
        if symbols[i][0] == c1 and i + 1 < len(symbols) and symbols[i + 1][0] == c2:
            first, second = symbols[i], symbols[i + 1]
            new_s = [replacement, first[1] + second[1]]
            if i > 0:
                changes.append(((symbols[i - 1][0], first[0]), -1))
                if symbols[i - 1][1] + new_s[1] < max_length:
                    changes.append(((symbols[i - 1][0], replacement), 1))
            symbols[i:i + 2] = [new_s]
            if i < len(symbols) - 1:
                changes.append(((second[0], symbols[i + 1][0]), -1))
                if symbols[i + 1][1] + new_s[1] < max_length:
                    changes.append(((replacement, symbols[i + 1][0]), 1))
        i += 1
    return changes


def hf_merge_list(w2id: dict[str, int], merges) -> list[tuple[str, str]]:
    """The merges as HF's tokenizer.json lists them: a repeated pair once, at its last place."""
    id2w = {i: w for w, i in w2id.items()}
    last = {}
    for rank, (pair, _) in enumerate(merges):
        last[pair] = rank
    return [(id2w[a], id2w[b]) for (a, b), _ in sorted(last.items(), key=lambda kv: kv[1])]


def byte_level_words(texts, split) -> dict[str, int]:
    """word -> count as the trainer's feed sees it: `split(text)` pieces, each as byte-level characters."""
    out: dict[str, int] = {}
    for t in texts:
        for piece in split(t):
            w = "".join(BYTE_TO_CHAR[b] for b in piece.encode("utf-8"))
            out[w] = out.get(w, 0) + 1
    return out
