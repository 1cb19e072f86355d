"""The encoding registry: the specs equal tiktoken's, rank files resolve through TLTOK_DATA, the cache and
the copies embedded in the package, and the download path works (and refuses a wrong hash) against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import pathlib
import shutil
import threading

import pytest

from tltok_jit.loaders import known_encodings as registry
from tltok_jit.model.description import AddedToken, TokenizerFileError
from tltok_jit.loaders.known_encodings import RankFileHashError, RankFileUnavailableError

from conftest import get_shared_path

tiktoken_load = pytest.importorskip("tiktoken.load")
openai_public = pytest.importorskip("tiktoken_ext.openai_public")




def _shared(stem: str) -> pathlib.Path:
    """The shared rank file, else the package's embedded copy (in a temporary tokenizers/tiktoken/
    folder); skips naming the file when there is neither."""
    return get_shared_path(f"tokenizers/tiktoken/{stem}.tiktoken")


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A clean environment: no data dirs, a private cache, no network unless a test allows it."""
    for var in ("TLTOK_DATA", "TLTOK_DOWNLOAD_BASE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TLTOK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TLTOK_OFFLINE", "1")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    return monkeypatch


# ------------------------------------------------------------------------------------- specs vs tiktoken


def _tiktoken_constructor_outputs() -> dict[str, tuple[dict, tuple[str, str]]]:
    """Run tiktoken's own constructors with the rank loading replaced by a recorder (no network)."""
    out = {}
    for name, ctor in openai_public.ENCODING_CONSTRUCTORS.items():
        seen = []

        def fake_load(url, expected_hash=None, _seen=seen):
            _seen.append((url, expected_hash))
            return {}

        def fake_data_gym(**kw):
            seen.append(("data_gym", kw))
            return {}

        mp = pytest.MonkeyPatch()
        mp.setattr(openai_public, "load_tiktoken_bpe", fake_load)
        mp.setattr(openai_public, "data_gym_to_mergeable_bpe_ranks", fake_data_gym)
        try:
            out[name] = (ctor(), seen[0])
        finally:
            mp.undo()
    return out


def test_names_are_tiktokens():
    assert registry.list_encoding_names() == list(openai_public.ENCODING_CONSTRUCTORS)


def test_specs_equal_tiktoken_source():
    r50k = registry.encoding_spec("r50k_base")
    for name, (ctor, source) in _tiktoken_constructor_outputs().items():
        spec = registry.encoding_spec(name)
        assert spec.name == ctor["name"] == name
        assert spec.pattern == ctor["pat_str"], name
        assert dict(spec.special_tokens) == ctor["special_tokens"], name
        assert spec.explicit_n_vocab == ctor.get("explicit_n_vocab"), name
        if name == "gpt2":  # tiktoken builds gpt2 from the data-gym files; we read r50k_base's ranks
            assert source[0] == "data_gym"
            assert (spec.rank_file, spec.url, spec.sha256) == (r50k.rank_file, r50k.url, r50k.sha256)
        else:
            assert (spec.url, spec.sha256) == source, name
            assert spec.url.endswith("/" + spec.rank_file)


def test_pattern_kinds():
    kinds = {n: registry.encoding_spec(n).pattern_kind for n in registry.list_encoding_names()}
    assert kinds == {"gpt2": "gpt2", "r50k_base": "gpt2", "p50k_base": "gpt2", "p50k_edit": "gpt2",
                     "cl100k_base": "cl100k", "o200k_base": "o200k", "o200k_harmony": "o200k"}


def test_unknown_name_lists_known_names(env):
    with pytest.raises(ValueError) as ei:
        registry.find_rank_file("o300k_base")
    msg = str(ei.value)
    assert "o300k_base" in msg and all(n in msg for n in registry.list_encoding_names())
    with pytest.raises(ValueError, match="cl100k_base"):
        registry.load_description("nope")


# ----------------------------------------------------------------------------------- local resolution


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("TLTOK_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert registry.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("TLTOK_CACHE_DIR")
    assert registry.cache_dir() == tmp_path / "x" / "tltok_jit"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert registry.cache_dir() == tmp_path / "home" / ".cache" / "tltok_jit"


@pytest.mark.parametrize("layout", ["tokenizers_dir", "tiktoken_dir"])
def test_tltok_data_resolution(env, tmp_path, layout):
    path = _shared("cl100k_base")
    d = path.parent.parent if layout == "tokenizers_dir" else path.parent
    env.setenv("TLTOK_DATA", os.pathsep.join([str(tmp_path / "does-not-exist"), str(d)]))
    assert registry.find_rank_file("cl100k_base") == path


def test_tltok_data_first_directory_wins(env, tmp_path):
    path = _shared("r50k_base")
    first = tmp_path / "first"
    first.mkdir()
    shutil.copy(path, first / "r50k_base.tiktoken")
    env.setenv("TLTOK_DATA", os.pathsep.join([str(first), str(path.parent)]))
    assert registry.find_rank_file("gpt2") == first / "r50k_base.tiktoken"


def test_tltok_data_file_with_wrong_hash(env, tmp_path):
    bad = tmp_path / "data" / "r50k_base.tiktoken"
    bad.parent.mkdir()
    bad.write_bytes(b"QQ== 0\n")
    env.setenv("TLTOK_DATA", str(bad.parent))
    with pytest.raises(RankFileHashError) as ei:
        registry.find_rank_file("r50k_base")
    msg = str(ei.value)
    spec = registry.encoding_spec("r50k_base")
    assert str(bad) in msg and spec.sha256 in msg and hashlib.sha256(b"QQ== 0\n").hexdigest() in msg
    assert bad.exists()  # a user's file is never deleted
    # the verdict is remembered per (path, size, mtime): rewriting the file is noticed
    shutil.copy(_shared("r50k_base"), bad)
    assert registry.find_rank_file("r50k_base") == bad


def test_offline_and_missing(env, tmp_path):
    env.setenv("TLTOK_DATA", str(tmp_path / "empty"))
    with pytest.raises(RankFileUnavailableError) as ei:
        registry.find_rank_file("p50k_edit")
    msg = str(ei.value)
    assert "p50k_base.tiktoken" in msg and str(tmp_path / "cache" / "p50k_base.tiktoken") in msg
    assert "TLTOK_OFFLINE" in msg


@pytest.mark.parametrize("name", ["gpt2", "r50k_base", "cl100k_base", "o200k_base", "o200k_harmony"])
def test_load_description_from_tltok_data(env, name):
    spec = registry.encoding_spec(name)
    path = _shared(spec.rank_file.removesuffix(".tiktoken"))
    env.setenv("TLTOK_DATA", str(path.parent.parent))
    d = registry.load_description(name)
    assert d.name == name and d.source == str(path)
    assert d.vocab == tiktoken_load.load_tiktoken_bpe(str(path))
    assert d.special_tokens == dict(spec.special_tokens)
    assert d.added_tokens[0] == AddedToken(next(iter(spec.special_tokens)), next(iter(spec.special_tokens.values())))
    assert d.pattern == spec.pattern and d.pattern_kind == spec.pattern_kind
    assert d.merges is None and d.ignore_merges and d.explicit_n_vocab == spec.explicit_n_vocab
    ids = set(d.vocab.values()) | set(d.special_tokens.values())
    assert not set(d.vocab.values()) & set(d.special_tokens.values())
    if spec.explicit_n_vocab is not None:
        assert max(ids) + 1 == len(ids) == spec.explicit_n_vocab


# --------------------------------------------------------------------------------- embedded copies

EMBEDDED = ["r50k_base", "cl100k_base", "o200k_base"]


@pytest.mark.parametrize("stem", EMBEDDED)
def test_embedded_copy_has_the_published_hash(stem):
    data = registry.embedded_rank_data(stem)
    # tiktoken's own expected_hash (test_specs_equal_tiktoken_source ties it to the spec), recomputed here
    assert hashlib.sha256(data).hexdigest() == _tiktoken_constructor_outputs()[stem][1][1]
    shared = pathlib.Path(os.environ.get("TLTOK_DATA", "/nonexistent")) / "tiktoken" / f"{stem}.tiktoken"
    if shared.is_file():
        assert data == shared.read_bytes()


@pytest.mark.parametrize("name", ["gpt2", "r50k_base", "cl100k_base", "o200k_base", "o200k_harmony"])
def test_load_description_offline_from_the_embedded_copy(env, tmp_path, name):
    """No TLTOK_DATA, an empty cache, no network: the embedded copy gives tiktoken's own parse."""
    d = registry.load_description(name)
    spec = registry.encoding_spec(name)
    assert d.source.endswith((f"{spec.rank_file}.gz", f"{spec.rank_file}.tok.xz")) and pathlib.Path(d.source).is_file()
    plain = tmp_path / spec.rank_file
    plain.write_bytes(registry.embedded_rank_data(name))
    assert d.vocab == tiktoken_load.load_tiktoken_bpe(str(plain))
    assert d.special_tokens == dict(spec.special_tokens) and d.explicit_n_vocab == spec.explicit_n_vocab
    assert not (tmp_path / "cache").exists()  # nothing written to the user's cache


def test_tltok_data_and_cache_come_before_the_embedded_copy(env, tmp_path):
    path = _shared("cl100k_base")
    env.setenv("TLTOK_DATA", str(path.parent))
    assert registry.load_description("cl100k_base").source == str(path)
    env.delenv("TLTOK_DATA")
    cached = tmp_path / "cache" / "cl100k_base.tiktoken"
    cached.parent.mkdir()
    shutil.copy(path, cached)
    assert registry.load_description("cl100k_base").source == str(cached)
    cached.unlink()
    assert registry.load_description("cl100k_base").source.endswith("cl100k_base.tiktoken.gz")


def test_damaged_embedded_copy_raises(env, monkeypatch):
    """The embedded copy is read when the ranks are first needed (a process whose tables are cached
    never reads it), and checked then."""
    monkeypatch.setattr(registry, "read_embedded", lambda filename: b"QQ== 0\n")
    d = registry.load_description("o200k_base")
    assert d.digest is not None
    with pytest.raises(RankFileHashError) as ei:
        d.vocab
    msg = str(ei.value)
    assert "o200k_base.tiktoken.tok.xz" in msg and registry.encoding_spec("o200k_base").sha256 in msg
    assert "reinstall" in msg


def test_rank_file_changed_after_verification_raises(env, tmp_path):
    """A local rank file is hashed when found, read when its ranks are first needed, and hashed again
    then: a file replaced in between is refused, not parsed."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    path = data_dir / "r50k_base.tiktoken"
    path.write_bytes(registry.embedded_rank_data("r50k_base"))
    env.setenv("TLTOK_DATA", str(data_dir))
    d = registry.load_description("r50k_base")
    assert d.source == str(path)
    path.write_bytes(b"QQ== 0\n")
    with pytest.raises(RankFileHashError, match="r50k_base.tiktoken: sha256 mismatch.*changed after it was verified"):
        d.vocab


def test_p50k_has_no_embedded_copy(env):
    assert registry.embedded_rank_data("p50k_base") is None
    with pytest.raises(RankFileUnavailableError) as ei:
        registry.load_description("p50k_edit")
    msg = str(ei.value)
    assert "p50k_base.tiktoken" in msg and "embeds no copy" in msg and "TLTOK_OFFLINE" in msg


def test_embedded_copy_comes_before_a_download(env, server):
    _online(env, server)  # the server has no files: any request would fail the load
    d = registry.load_description("r50k_base")
    assert d.source.endswith("r50k_base.tiktoken.gz")
    assert server.requests == []
    # p50k_base is not embedded: it is downloaded (here: a 404 naming the URL)
    with pytest.raises(RankFileUnavailableError, match="404"):
        registry.load_description("p50k_base")
    assert server.requests == ["/encodings/p50k_base.tiktoken"]


# --------------------------------------------------------------------------------- download (real HTTP)


class _Server:
    def __init__(self, root: pathlib.Path):
        self.requests: list[str] = []
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.requests.append(self.path)
                super().do_GET()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     functools.partial(Handler, directory=str(root)))
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/encodings"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "www"
    (root / "encodings").mkdir(parents=True)
    s = _Server(root)
    s.dir = root / "encodings"
    yield s
    s.close()


def _online(env, server):
    env.delenv("TLTOK_OFFLINE")
    env.setenv("TLTOK_DOWNLOAD_BASE", server.base + "/")


def _leftovers(cache: pathlib.Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


def test_download_success_then_cached(env, server, tmp_path):
    src = _shared("r50k_base")
    shutil.copy(src, server.dir / "r50k_base.tiktoken")
    _online(env, server)
    cache = tmp_path / "cache"

    got = registry.find_rank_file("r50k_base")
    assert got == cache / "r50k_base.tiktoken"
    assert got.read_bytes() == src.read_bytes()
    assert server.requests == ["/encodings/r50k_base.tiktoken"]
    assert _leftovers(cache) == ["r50k_base.tiktoken"]  # no temporary file left behind

    # second lookup, and gpt2 (same file): served from the cache, no new request
    assert registry.find_rank_file("r50k_base") == got
    assert registry.find_rank_file("gpt2") == got
    assert len(server.requests) == 1
    d = registry.load_description("gpt2")
    assert d.vocab == tiktoken_load.load_tiktoken_bpe(str(src)) and d.source == str(got)


def test_download_sha_mismatch(env, server, tmp_path):
    src = _shared("r50k_base")
    data = bytearray(src.read_bytes())
    data[100] ^= 1  # one flipped bit
    (server.dir / "r50k_base.tiktoken").write_bytes(bytes(data))
    _online(env, server)
    cache = tmp_path / "cache"

    with pytest.raises(RankFileHashError) as ei:
        registry.find_rank_file("r50k_base")
    msg = str(ei.value)
    url = server.base + "/r50k_base.tiktoken"
    assert url in msg
    assert registry.encoding_spec("r50k_base").sha256 in msg
    assert hashlib.sha256(bytes(data)).hexdigest() in msg
    assert _leftovers(cache) == []  # the download was deleted, nothing renamed into place
    assert server.requests == ["/encodings/r50k_base.tiktoken"]


def test_download_404_names_the_url(env, server):
    _online(env, server)
    with pytest.raises(RankFileUnavailableError) as ei:
        registry.find_rank_file("cl100k_base")
    assert server.base + "/cl100k_base.tiktoken" in str(ei.value)
    assert "404" in str(ei.value)


def test_corrupt_cache_file_is_replaced(env, server, tmp_path):
    src = _shared("r50k_base")
    shutil.copy(src, server.dir / "r50k_base.tiktoken")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "r50k_base.tiktoken").write_bytes(b"garbage\n")
    _online(env, server)
    got = registry.find_rank_file("r50k_base")
    assert got.read_bytes() == src.read_bytes()
    assert len(server.requests) == 1


def test_tltok_data_takes_precedence_over_download(env, server):
    path = _shared("r50k_base")
    _online(env, server)
    env.setenv("TLTOK_DATA", str(path.parent))
    assert registry.find_rank_file("r50k_base") == path
    assert server.requests == []


def test_hash_error_is_a_tokenizer_file_error():
    assert issubclass(RankFileHashError, TokenizerFileError)
    assert issubclass(RankFileUnavailableError, OSError)


def test_embedded_token_list_rebuilds_the_file_or_refuses():
    import lzma
    import struct

    from tltok_jit import data

    packed = struct.pack("<I", 3) + bytes([1, 2, 1]) + b"a" + b"bc" + b"\xff"
    assert data._tiktoken_from_tokens(packed) == b"YQ== 0\nYmM= 1\n/w== 2\n"
    for bad in (packed[:-1], packed + b"x", struct.pack("<I", 9) + packed[4:]):
        with pytest.raises(ValueError, match="lengths do not match"):
            data._tiktoken_from_tokens(bad)
    assert lzma.decompress(lzma.compress(packed)) == packed
