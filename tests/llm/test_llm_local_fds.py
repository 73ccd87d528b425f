"""Building two embedded models at once on two threads must leave the process's
stdout and stderr where they were: llama-cpp-python points fds 1 and 2 at
/dev/null while it builds one, and overlapping builds used to restore each
other's /dev/null (a test run then ended with no summary). No weights needed:
the model class is replaced by one that silences the fds the same way."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

llama_cpp = pytest.importorskip("llama_cpp")
from llama_cpp._utils import suppress_stdout_stderr  # noqa: E402

from sidecar.llm import voice_llama  # noqa: E402
from sidecar.llm.local import LocalLLM  # noqa: E402


class SilencingLlama:
    """Does to the fds what llama_cpp.Llama(verbose=False) does while it loads."""

    entered = threading.Barrier(2, timeout=5)
    #: A GGUF without a chat template (the loader reads it once built).
    metadata: dict[str, str] = {}

    def __init__(self, path: str, **_: object) -> None:
        with suppress_stdout_stderr(disable=False):
            try:  # wait (bounded) for the other build to be inside too, as when they overlap
                SilencingLlama.entered.wait(timeout=0.3)
            except threading.BrokenBarrierError:
                pass
            time.sleep(0.05)

    def close(self) -> None:
        pass


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def test_overlapping_model_builds_leave_stdout_and_stderr_alone(tmp_path: Path, monkeypatch) -> None:
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF")
    monkeypatch.setattr(voice_llama, "VoiceLlama", SilencingLlama)  # the class LocalLLM builds
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    before = {fd: _identity(fd) for fd in (1, 2)}
    try:
        models = [LocalLLM(str(weights)) for _ in range(2)]
        threads = [threading.Thread(target=m.preload) for m in models]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        after = {fd: _identity(fd) for fd in (1, 2)}
    finally:
        for fd, copy in saved.items():  # whatever happened, give pytest its output back
            os.dup2(copy, fd)
            os.close(copy)
    assert all(m.loaded for m in models)
    assert after == before, "a model build left stdout or stderr pointing at /dev/null"
