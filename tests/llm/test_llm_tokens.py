"""Token counting without litellm and without a network."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from sidecar.llm.tokens import approximate_count, bundled_cl100k, cl100k_counter


def test_cl100k_counts_from_the_bundled_file_and_never_downloads(monkeypatch, tmp_path) -> None:
    import tiktoken.load

    def no_network(*args: object, **kwargs: object) -> bytes:
        raise AssertionError(f"tiktoken tried to fetch {args}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setattr(tiktoken.load, "read_file_cached", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache: get_encoding would download
    assert bundled_cl100k() is not None, "litellm's bundled cl100k_base file is missing"
    count = cl100k_counter()
    assert count("hello world") == 2
    assert count("<|endoftext|>") == 7  # special tokens are text here, as litellm counts them
    assert list(tmp_path.iterdir()) == []  # nothing written to a cache either


def test_a_damaged_vocabulary_falls_back_to_an_estimate(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    damaged = tmp_path / "cl100k"
    damaged.write_bytes(b"aGVsbG8= 0\n")
    with caplog.at_level(logging.WARNING, logger="sidecar.llm"):
        count = cl100k_counter(damaged)
    assert count is approximate_count and "estimated" in caplog.text
    assert count("12345678") == 2 and count("") == 0


def test_counts_match_tiktokens_own_cl100k_base() -> None:
    import tiktoken

    with pytest.MonkeyPatch.context() as mp:
        path = bundled_cl100k()
        assert path is not None
        mp.setenv("TIKTOKEN_CACHE_DIR", str(path.parent))  # tiktoken's cache: the same file, offline
        reference = tiktoken.get_encoding("cl100k_base")
    count = cl100k_counter()
    texts = [
        "",
        "The goblin's 3 rusty blades clatter!  Ça va? 東京 🐉\n\n  indented\tTAB",
        "npc_12 loc_3 <|endoftext|> <|fim_prefix|> 1234567 don't we'll",
        "a" * 5000,
    ]
    for text in texts:
        assert count(text) == len(reference.encode(text, disallowed_special=())), text[:40]
