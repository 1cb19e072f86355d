"""The `>>>` examples in the public docstrings run, and say what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

import tltok_jit

MODULES = ("tltok_jit", "tltok_jit.encoding", "tltok_jit.errors", "tltok_jit.special_policy")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch):
    monkeypatch.setenv("TLTOK_OFFLINE", "1")  # the examples use the rank files embedded in the package
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, name, globs={"tltok_jit": tltok_jit}) if t.examples]
    assert tests, f"{name} has no >>> examples"
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (see above)"


def test_encoding_methods_show_an_example():
    public = ("encode", "encode_ordinary", "encode_to_numpy", "encode_batch", "count", "decode", "decode_batch",
              "encode_single_token", "token_pieces", "encode_arrow", "count_arrow", "decode_arrow",
              "stream_encoder", "is_special_token", "special_policy")
    missing = [m for m in public if ">>>" not in (getattr(tltok_jit.Encoding, m).__doc__ or "")]
    assert not missing, f"Encoding methods without a >>> example: {missing}"
