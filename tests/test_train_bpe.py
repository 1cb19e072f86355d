"""train_bpe: merges and ids equal to Hugging Face `tokenizers`' BpeTrainer (corpora, patterns, vocab
sizes, special tokens, min_frequency, max_token_length); the kernel against the pure-Python replay
(tests/bpe_reference.py, itself checked against HF first); the thread count; the sources; the saved
tokenizer.json and rank file encoding alike in tltok_jit, HF and tiktoken; bad input."""

from __future__ import annotations

import json
import pathlib
import sysconfig

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tltok_jit
from tltok_jit.model.patterns import CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN
from tltok_jit.training import train_bpe
from tltok_jit.training.bpe import initial_vocabulary, learn
from tltok_jit.training.counts import PieceCounts
from tltok_jit.training.save import onig_pattern, tokenizer_json

from bpe_reference import byte_level_words, hf_merge_list, train_reference

tokenizers = pytest.importorskip("tokenizers")
CORPORA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "corpora"
PATTERNS = {"o200k_base": O200K_PATTERN, "cl100k_base": CL100K_PATTERN, "gpt2": R50K_PATTERN}


def _read(name: str, n: int) -> str:
    p = CORPORA / name
    if not p.exists():
        pytest.skip(f"corpus {name} not available")
    return p.read_text(encoding="utf-8")[:n]


def _udhr(n: int) -> str:
    d = CORPORA / "udhr"
    if not d.exists():
        pytest.skip("UDHR corpus not available")
    out = []
    for f in sorted(d.iterdir()):
        if f.is_file():
            out.append(f.read_text(encoding="utf-8", errors="replace")[:3000])
    return "\n".join(out)[:n]


def _code(n: int) -> str:
    lib = pathlib.Path(sysconfig.get_paths()["stdlib"])
    out, size = [], 0
    for f in sorted(lib.glob("*.py")):
        t = f.read_text(encoding="utf-8", errors="replace")
        out.append(t)
        size += len(t)
        if size >= n:
            break
    return "".join(out)[:n]


def corpus(name: str) -> list[str]:
    text = {"english": lambda: _read("english-war-and-peace.txt", 150_000),
            "chinese": lambda: _read("chinese-sanguo-yanyi.txt", 60_000),
            "udhr": lambda: _udhr(150_000),
            "code": lambda: _code(150_000)}[name]()
    return text.splitlines(keepends=True)


def hf_train(texts, pattern: str, vocab_size: int, specials=(), min_frequency=0, max_token_length=None) -> dict:
    """HF's BpeTrainer after Split(pattern, "isolated") + ByteLevel; a tiktoken pattern as Oniguruma
    must spell it (save.onig_pattern: cl100k's `{1,3}+`)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(onig_pattern(pattern)), "isolated"),
                                                  pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=list(specials),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
                                  max_token_length=max_token_length)
    tok.train_from_iterator(texts, trainer)
    return json.loads(tok.to_str())["model"]


def assert_same_as_hf(enc, hf_model: dict) -> None:
    ours = tokenizer_json(enc)["model"]
    assert ours["vocab"] == hf_model["vocab"]
    theirs = [list(m) if isinstance(m, list) else m.split(" ") for m in hf_model["merges"]]
    assert len(ours["merges"]) == len(theirs)
    assert ours["merges"] == theirs


@pytest.mark.parametrize("name,pattern,vocab_size,specials,min_frequency", [
    ("english", "o200k_base", 3000, ["<|endoftext|>"], 0),
    ("english", "cl100k_base", 1000, [], 2),
    ("code", "o200k_base", 2500, ["<|endoftext|>", "<|pad|>"], 0),
    ("code", "gpt2", 1500, [], 0),
    ("chinese", "o200k_base", 3000, [], 0),
    ("chinese", "cl100k_base", 800, ["<s>"], 3),
    ("udhr", "o200k_base", 4000, ["<|endoftext|>"], 0),
    ("udhr", "gpt2", 2000, [], 5),
])
def test_exact_vs_hf(name, pattern, vocab_size, specials, min_frequency):
    texts = corpus(name)
    enc = train_bpe(texts, vocab_size, pattern=pattern, special_tokens=specials, min_frequency=min_frequency)
    hf = hf_train(texts, PATTERNS[pattern], vocab_size, specials, min_frequency)
    assert_same_as_hf(enc, hf)
    assert len(hf["vocab"]) == (vocab_size if min_frequency == 0 else len(hf["vocab"]))


def test_min_frequency_stops_early_as_hf():
    texts = corpus("english")[:400]
    enc = train_bpe(texts, 5000, pattern="o200k_base", min_frequency=40)
    hf = hf_train(texts, O200K_PATTERN, 5000, (), 40)
    assert_same_as_hf(enc, hf)
    assert len(hf["vocab"]) < 5000  # the test stops on min_frequency, not on the size


def test_max_token_length_as_hf():
    texts = corpus("english")[:2000]
    for max_len in (2, 4, 7):
        enc = train_bpe(texts, 1500, pattern="gpt2", max_token_length=max_len)
        hf = hf_train(texts, R50K_PATTERN, 1500, (), 0, max_len)
        assert_same_as_hf(enc, hf)
        assert max(len(b) for b in enc.ranks) < max(max_len, 3)


def test_special_token_text_is_ordinary_text_while_training():
    # HF's trainer does not split added tokens out of the training text (the tokenizer has none yet)
    texts = ["<|endoftext|> hello <|endoftext|>world"] * 30 + ["hello there"] * 10
    enc = train_bpe(texts, 300, pattern="o200k_base", special_tokens=["<|endoftext|>"])
    assert_same_as_hf(enc, hf_train(texts, O200K_PATTERN, 300, ["<|endoftext|>"]))
    assert enc.specials == {"<|endoftext|>": 0}


def test_single_char_and_repeated_special_tokens():
    texts = ["a!b!c ab!c"] * 20
    specials = ["!", "<x>", "!", "a"]
    enc = train_bpe(texts, 300, pattern="gpt2", special_tokens=specials)
    assert_same_as_hf(enc, hf_train(texts, R50K_PATTERN, 300, specials))


# ------------------------------------------------------------------ the reference: against HF, then the kernel
def _regex_split(pattern):
    import regex

    rx = regex.compile(pattern)
    return lambda t: [m.group() for m in rx.finditer(t)]


def test_reference_equals_hf():
    texts = corpus("english")[:1500] + corpus("chinese")[:200]
    wc = byte_level_words(texts, _regex_split(O200K_PATTERN))
    w2id, merges = train_reference(wc, 1200, special_tokens=["<|endoftext|>"])
    hf = hf_train(texts, O200K_PATTERN, 1200, ["<|endoftext|>"])
    assert w2id == hf["vocab"]
    assert [list(m) for m in hf_merge_list(w2id, merges)] == [list(m) for m in hf["merges"]]


def _pieces(word_counts: dict[bytes, int]) -> PieceCounts:
    keys = list(word_counts)
    offs = np.zeros(len(keys) + 1, np.int64)
    np.cumsum([len(k) for k in keys], out=offs[1:])
    return PieceCounts(np.frombuffer(b"".join(keys), np.uint8).copy(), offs,
                       np.array([word_counts[k] for k in keys], np.int64))


def _kernel_vs_reference(word_counts: dict[bytes, int], vocab_size, specials=(), min_frequency=0, max_len=None):
    from tltok_jit.model.byte_alphabet import BYTE_TO_CHAR

    enc = learn(_pieces(word_counts), vocab_size, pattern=R50K_PATTERN, special_tokens=specials,
                min_frequency=min_frequency, max_token_length=max_len)
    wc = {"".join(BYTE_TO_CHAR[b] for b in k): c for k, c in word_counts.items()}
    w2id, merges = train_reference(wc, vocab_size, special_tokens=specials, min_frequency=min_frequency,
                                   max_token_length=max_len)
    assert enc.merge_ids == merges  # every merge, repeats included
    assert tokenizer_json(enc)["model"]["vocab"] == w2id
    return enc, merges


_words = st.dictionaries(st.binary(min_size=1, max_size=9).map(lambda b: bytes(x % 4 + 97 for x in b)),
                         st.integers(1, 40), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(_words, st.integers(256, 330), st.integers(0, 3),
       st.one_of(st.none(), st.integers(1, 6)), st.sampled_from([(), ("ab",), ("<s>", "a")]))
def test_kernel_equals_reference(word_counts, vocab_size, min_frequency, max_len, specials):
    vocab_size += len(set(specials))
    _kernel_vs_reference(word_counts, vocab_size, list(specials), min_frequency, max_len)


def test_merge_reaching_a_special_tokens_string_reuses_its_id():
    # "already in the vocabulary": the merge gets the existing id and the vocabulary does not grow
    texts = ["ab ab abc cab"] * 20
    specials = ["ab", "<s>"]
    enc = train_bpe(texts, 262, pattern="gpt2", special_tokens=specials)
    assert_same_as_hf(enc, hf_train(texts, R50K_PATTERN, 262, specials))
    ab = [n for (p, n) in enc.merge_ids if n == 0]
    assert ab and enc.ranks[b"ab"] == 0
    assert len(enc.merge_ids) == 262 - 258 + 1


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(alphabet="ab c\n'1é中", min_size=0, max_size=30), min_size=1, max_size=30),
       st.integers(256, 320))
def test_random_texts_equal_hf(texts, vocab_size):
    if not "".join(texts):
        return
    from tltok_jit.training.counts import count_pieces
    from tltok_jit.training.source import iter_batches

    # the merges alone (train_bpe's Encoding is built the same way in every other test)
    vocab = learn(count_pieces(iter_batches(texts), CL100K_PATTERN), vocab_size, pattern=CL100K_PATTERN)
    assert_same_as_hf(vocab, hf_train(texts, CL100K_PATTERN, vocab_size))


def test_thread_count_does_not_change_the_result():
    texts = corpus("english") + corpus("udhr")  # ~300 KB: several workers' shares
    results = []
    for threads in (1, 2, 3):
        enc = train_bpe(texts, 2000, pattern="o200k_base", num_threads=threads)
        results.append((enc.merge_ids, enc.ranks))
    assert results[0] == results[1] == results[2]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(alphabet="ab c\n'1é中", min_size=0, max_size=40), min_size=1, max_size=40),
       st.integers(2, 4))
def test_thread_count_never_changes_random_corpora(texts, threads):
    from tltok_jit.training import counts
    from tltok_jit.training.source import iter_batches

    if not "".join(texts):
        return
    old = counts.MIN_PART_BYTES
    counts.MIN_PART_BYTES = 1  # split even these tiny batches over every thread
    try:
        one = counts.count_pieces(iter_batches(texts), O200K_PATTERN, num_threads=1)
        many = counts.count_pieces(iter_batches(texts), O200K_PATTERN, num_threads=threads)
    finally:
        counts.MIN_PART_BYTES = old

    def as_dict(p):
        return {bytes(p.data[p.offsets[i]:p.offsets[i + 1]]): int(p.counts[i]) for i in range(len(p))}

    assert as_dict(one) == as_dict(many)
    # and the merges do not depend on the order the tables list the pieces in
    a = learn(one, 300, pattern=O200K_PATTERN)
    b = learn(many, 300, pattern=O200K_PATTERN)
    assert a.merge_ids == b.merge_ids


def test_progress_reports_both_stages():
    seen = []
    train_bpe(corpus("english")[:2000], 700, progress=lambda stage, done, total: seen.append((stage, done, total)))
    stages = [s for s, _, _ in seen]
    assert stages[0] == "count" and stages[-1] == "merge"
    assert seen[-1][1] == seen[-1][2] == 700 - 256  # every merge done, of the ones asked for


# ------------------------------------------------------------------ sources
def test_sources_give_the_same_vocabulary(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = corpus("english")[:3000]
    want = train_bpe(lines, 600, pattern="o200k_base")
    arr = pa.array(lines, pa.string())
    variants = {
        "array": arr,
        "large": pa.array(lines, pa.large_string()),
        "chunked": pa.chunked_array([arr[:1000], arr[1000:]]),
        "table": pa.table({"id": list(range(len(lines))), "text": arr}),
        "sliced": pa.array(["x"] + lines)[1:],
        "generator": (t for t in lines),
    }
    pq.write_table(pa.table({"text": arr}), tmp_path / "a.parquet", row_group_size=500)
    (tmp_path / "txt").mkdir()
    (tmp_path / "txt" / "b.txt").write_text("".join(lines), encoding="utf-8")
    variants["parquet"] = str(tmp_path / "a.parquet")
    variants["text file"] = str(tmp_path / "txt" / "b.txt")
    variants["folder"] = str(tmp_path / "txt")
    variants["glob"] = str(tmp_path / "*.parquet")
    variants["paths"] = [tmp_path / "a.parquet"]
    for label, src in variants.items():
        got = train_bpe(src, 600, pattern="o200k_base")
        assert got.merge_ids == want.merge_ids, label


def test_nulls_are_no_text():
    import pyarrow as pa

    lines = corpus("english")[:500]
    want = train_bpe(lines, 400, pattern="gpt2")
    got = train_bpe(pa.array([None] + lines[:250] + [None] + lines[250:]), 400, pattern="gpt2")
    assert got.merge_ids == want.merge_ids


def test_text_file_batches_cut_at_line_ends(tmp_path):
    from tltok_jit.training.source import iter_batches

    lines = corpus("code")[:2000]
    p = tmp_path / "c.py"
    p.write_text("".join(lines), encoding="utf-8")
    batches = list(iter_batches(str(p), batch_bytes=4096))
    assert len(batches) > 5
    rows = [bytes(d[o[i]:o[i + 1]]).decode() for d, o in batches for i in range(len(o) - 1)]
    assert rows == lines


def test_regex_pattern_without_scanner_warns_and_matches_hf():
    texts = corpus("english")[:800]
    pattern = r"\w+|[^\w\s]+"  # gaps (the spaces) are pieces too, as HF's "isolated"
    with pytest.warns(UserWarning, match="regex"):
        enc = train_bpe(texts, 500, pattern=pattern)
    assert_same_as_hf(enc, hf_train(texts, pattern, 500))


# ------------------------------------------------------------------ saved files encode alike everywhere
def test_round_trip_tltok_hf_tiktoken(tmp_path):
    tiktoken = pytest.importorskip("tiktoken")
    from tokenizers import Tokenizer

    train = corpus("english")[:2500] + corpus("code")[:2500] + corpus("udhr")[:600] + corpus("chinese")[:150]
    held = "".join(corpus("english")[-400:] + corpus("code")[-400:] + corpus("udhr")[-100:] + corpus("chinese")[-60:])
    enc = train_bpe(train, 3000, pattern="o200k_base", special_tokens=["<|endoftext|>"])
    enc.save_tokenizer_json(tmp_path / "tok.json")
    enc.save_tiktoken(tmp_path / "tok.tiktoken")
    hf = Tokenizer.from_file(str(tmp_path / "tok.json"))
    ours_file = tltok_jit.from_file(tmp_path / "tok.json")
    tk = tiktoken.Encoding("trained", pat_str=enc.pattern, mergeable_ranks=enc.ranks, special_tokens=enc.specials)
    from tiktoken.load import load_tiktoken_bpe

    assert load_tiktoken_bpe(str(tmp_path / "tok.tiktoken")) == enc.ranks
    from_rank_file = tltok_jit.Encoding.from_tiktoken_file(tmp_path / "tok.tiktoken", pattern=enc.pattern,
                                                            special_tokens=enc.specials, name="trained")
    docs = held.split("\n\n") + [held, "<|endoftext|> after", "  spaces   and\ttabs\n\n"]
    for doc in docs:
        want = hf.encode(doc, add_special_tokens=False).ids
        assert enc.encode(doc, allowed_special="all") == want
        assert ours_file.encode(doc, allowed_special="all") == want
        assert tk.encode(doc, allowed_special="all") == want
        assert from_rank_file.encode(doc, allowed_special="all") == want
        assert enc.decode(want) == doc == hf.decode(want, skip_special_tokens=False)


# ------------------------------------------------------------------ bad input
def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="vocab_size"):
        train_bpe(["hello"], 255)
    with pytest.raises(ValueError, match="vocab_size"):
        train_bpe(["hello"], 256, special_tokens=["<s>"])
    with pytest.raises(ValueError, match="source"):
        train_bpe([], 300)
    with pytest.raises(ValueError, match="source"):
        train_bpe(["", ""], 300)
    with pytest.raises(ValueError, match="pattern"):
        train_bpe(["hello"], 300, pattern="o300k_base")
    with pytest.raises(ValueError, match="min_frequency"):
        train_bpe(["hello"], 300, min_frequency=-1)
    with pytest.raises(ValueError, match="special_tokens"):
        train_bpe(["hello"], 300, special_tokens="<s>")
    with pytest.raises(ValueError, match="source"):
        train_bpe([b"bytes"], 300)
    with pytest.raises(ValueError, match="source"):
        train_bpe("/nonexistent/dir/*.parquet", 300)


def test_cl100k_digit_runs_need_the_oniguruma_spelling():
    texts = ["1234567 89 12345"] * 5
    enc = train_bpe(texts, 262, pattern="cl100k_base")
    assert_same_as_hf(enc, hf_train(texts, CL100K_PATTERN, 262))
    assert b"1234" not in enc.ranks and b"123" in enc.ranks


def test_initial_ids_are_hf_order():
    v = initial_vocabulary(["<s>", "<s>", "!"])
    assert v["<s>"] == 0 and v["!"] == 1 and len(v) == 257
    assert list(v)[2] == '"'  # code point order of the byte-level characters


# ------------------------------------------------------------------ the CLI
def test_cli_train_writes_what_train_bpe_gives(tmp_path, capsys):
    from tltok_jit.integrations.cli import main

    lines = corpus("english")[:2000]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.txt").write_text("".join(lines), encoding="utf-8")
    out = tmp_path / "tok.json"
    assert main(["train", str(tmp_path / "data"), "--vocab-size", "600", "--pattern", "o200k_base",
                 "-o", str(out), "--special", "<|endoftext|>", "--min-frequency", "2"]) == 0
    want = train_bpe(lines, 600, special_tokens=["<|endoftext|>"], min_frequency=2)
    assert json.loads(out.read_text(encoding="utf-8")) == tokenizer_json(want)
    assert main(["train", str(tmp_path / "data"), "--vocab-size", "600", "-o", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    rank_file = tmp_path / "tok.tiktoken"
    assert main(["train", str(tmp_path / "data"), "--vocab-size", "600", "-o", str(rank_file), "--quiet"]) == 0
    from tiktoken.load import load_tiktoken_bpe

    assert load_tiktoken_bpe(str(rank_file)) == train_bpe(lines, 600).ranks


@pytest.mark.parametrize("args,flag", [
    (["--vocab-size", "100"], "--vocab-size"),
    (["--vocab-size", "600", "--pattern", "nonesuch"], "--pattern"),
    (["--vocab-size", "600", "--min-frequency", "-3"], "--min-frequency"),
    (["--vocab-size", "600", "--special", "<s>", "--special", ""], "--special"),
])
def test_cli_errors_name_the_flag_without_traceback(tmp_path, capsys, args, flag):
    from tltok_jit.integrations.cli import main

    (tmp_path / "a.txt").write_text("hello world\n", encoding="utf-8")
    assert main(["train", str(tmp_path / "a.txt"), "-o", str(tmp_path / "t.json"), *args]) == 2
    err = capsys.readouterr().err
    assert flag in err and "Traceback" not in err and err.count("\n") == 1


def test_cli_missing_input(tmp_path, capsys):
    from tltok_jit.integrations.cli import main

    assert main(["train", str(tmp_path / "nope"), "--vocab-size", "600", "-o", str(tmp_path / "t.json")]) == 2
    assert "INPUT" in capsys.readouterr().err


def test_one_compiled_variant_per_kernel(tmp_path):
    # warm() (run by the package build) compiles what every source type runs: no first-call compile
    import pyarrow as pa

    from tltok_jit.kernels import train_bpe as K

    K.warm()
    lines = corpus("english")[:300]
    (tmp_path / "a.txt").write_text("".join(lines), encoding="utf-8")
    for src in (lines, pa.array([None] + lines), str(tmp_path / "a.txt")):
        train_bpe(src, 300, num_threads=2)
    with pytest.warns(UserWarning):
        train_bpe(lines, 300, pattern=r"\w+")
    for name in ("count_rows", "add_pieces", "table_pieces", "grow_table", "train"):
        assert len(getattr(K, name).signatures) == 1, name
