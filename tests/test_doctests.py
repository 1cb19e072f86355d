"""The `>>>` examples in the public docstrings run, and say what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

import tltok_jit

MODULES = ("tltok_jit", "tltok_jit.encoding", "tltok_jit.errors", "tltok_jit.engine.special_policy",
           "tltok_jit.engine.core")


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


# public, but a front end's or a kernel caller's, not a tiktoken user's: described, no example
_NO_EXAMPLE = {"from_tiktoken_file", "token_byte_table", "decoder_chain", "encode_rows"}


def test_encoding_methods_show_an_example():
    public = [m for m in vars(tltok_jit.Encoding) if not m.startswith("_") and m not in _NO_EXAMPLE]
    assert len(public) >= 30
    missing = [m for m in public if ">>>" not in (getattr(tltok_jit.Encoding, m).__doc__ or "")]
    assert not missing, f"Encoding methods without a >>> example: {missing}"
