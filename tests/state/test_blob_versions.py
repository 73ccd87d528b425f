"""A save of every earlier format version still imports (issue 31, item 1), as the
release that wrote it wrote it (tests/state/blobs/README.md), and reads as that
session: the fields a later version added get their defaults."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec
import pytest
from test_blob_fuzz import _base

from sidecar.config import StateLimits
from sidecar.state import codec
from sidecar.state.model import ActorUsage
from sidecar.state.store import SessionStore

BLOBS = Path(__file__).parent / "blobs"
VERSIONS = sorted(int(p.stem[1:]) for p in BLOBS.glob("v*.blob"))


def test_every_earlier_format_version_has_a_blob() -> None:
    assert set(range(1, codec.BLOB_VERSION)) <= set(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_an_earlier_versions_save_imports_as_the_same_session(tmp_path: Path, version: int) -> None:
    blob = (BLOBS / f"v{version}.blob").read_bytes()
    assert msgspec.msgpack.decode(blob)["version"] == version

    async def scenario() -> None:
        today, _ = await _base(str(tmp_path / "today"))  # the same session, built by today's code
        store = SessionStore(StateLimits(), str(tmp_path / "state"))
        await store.start()
        await store.import_("old", blob)
        old, now = store.get("old"), today.get("s")
        assert old.revision == now.revision
        assert msgspec.to_builtins(old.world) == msgspec.to_builtins(now.world)
        assert old.transcripts == now.transcripts and old.notes == now.notes
        assert old.errors_by_reason == now.errors_by_reason
        assert old.usage == {"bob": ActorUsage(prompt_tokens=10, completion_tokens=3, cost_usd=0.001, runs=1)}
        if version < 2:
            assert old.prompt_state == {}
        # It is a session like any other now: it exports at today's version and imports again.
        again = store.export("old")
        assert msgspec.msgpack.decode(again)["version"] == codec.BLOB_VERSION
        await store.import_("again", again)
        back = store.get("again")
        assert msgspec.to_builtins(back.world) == msgspec.to_builtins(old.world) and back.usage == old.usage
        await store.aclose()
        await today.aclose()

    asyncio.run(scenario())


@pytest.mark.parametrize("field", ["events_through", "events_summarised"])
def test_a_summarys_event_counts_are_checked_like_its_others(field: str) -> None:
    """Format 4's fields are counts: a save with a negative one is INVALID_BLOB, naming it."""
    from sidecar.errors import InvalidBlob
    from sidecar.state.blobcheck import check_blob_session
    from sidecar.state.model import Session, TranscriptSummary

    session = Session(id="s", summaries={"bob": TranscriptSummary("Bob talked.", **{field: -1})})
    with pytest.raises(InvalidBlob, match=f"transcript summary's {field} -1"):
        check_blob_session(session, StateLimits())
