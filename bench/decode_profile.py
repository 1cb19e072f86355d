"""decode, decode_bytes and the batch decodes, ours vs tiktoken in one process (o200k_base, tiktoken's ids
of the English corpus; best of 7, the two libraries interleaved). bench/run.py --modes decode gives the
fresh-process numbers; this is the quick loop used while changing the decode paths.

    python bench/decode_profile.py [REPO]     # REPO: the checkout whose tltok_jit is timed (default: this one)
"""

import os
import sys
import time
from pathlib import Path

REPO = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parent.parent)
os.environ["TLTOK_COMPILE"] = "foreground"
sys.path.insert(0, REPO)

import tiktoken  # noqa: E402

import tltok_jit  # noqa: E402
from bench import data, oracle  # noqa: E402

if "TLTOK_DATA" not in os.environ:
    os.environ["TLTOK_DATA"] = str(data.tokenizers_dir())
tk = oracle.tiktoken_encoding("o200k_base")
enc = tltok_jit.get_encoding("o200k_base")
text = data.corpus("english")
ids = tk.encode_ordinary(text)
docs = data.split_docs(text)
batch = tk.encode_ordinary_batch(docs)
short = batch[100]
tiny = [tk.encode_ordinary(text[i:i + 20]) for i in range(0, 400_000, 20)]
assert enc.decode(ids) == tk.decode(ids) and enc.decode_batch(batch) == tk.decode_batch(batch)
for s in tiny[:3000]: enc.decode(s)  # warm (and, after, build the join table)
def loop(f, xs):
    def g():
        for x in xs: f(x)
    return g
cases = [
    ("decode 3.2 MB (752k ids)", 1, lambda: enc.decode(ids), lambda: tk.decode(ids)),
    ("decode_bytes 3.2 MB", 1, lambda: enc.decode_bytes(ids), lambda: tk.decode_bytes(ids)),
    (f"decode_batch {len(batch)} docs", 1, lambda: enc.decode_batch(batch), lambda: tk.decode_batch(batch)),
    (f"decode_bytes_batch {len(batch)} docs", 1, lambda: enc.decode_bytes_batch(batch), lambda: tk.decode_bytes_batch(batch)),
    (f"decode one doc ({len(short)} ids) x2000", 2000, loop(enc.decode, [short] * 2000), loop(tk.decode, [short] * 2000)),
    (f"decode each doc ({len(batch)} docs)", len(batch), loop(enc.decode, batch), loop(tk.decode, batch)),
    ("decode 20-char strings (20k)", len(tiny), loop(enc.decode, tiny), loop(tk.decode, tiny)),
]
print(f"repo {REPO}")
print(f"{'case':40s} {'ours':>10s} {'tiktoken':>10s}  ratio  (ms; per-call us for loops)")
for name, per, f, g in cases:
    a, b = [], []
    for _ in range(7):
        t = time.perf_counter(); f(); a.append(time.perf_counter() - t)
        t = time.perf_counter(); g(); b.append(time.perf_counter() - t)
    sc = 1e3 if per == 1 else 1e6 / per
    print(f"{name:40s} {min(a)*sc:10.2f} {min(b)*sc:10.2f}  {min(b)/min(a):5.2f}")
