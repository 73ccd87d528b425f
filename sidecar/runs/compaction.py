"""Transcript compaction, the run side (issue 23; docs/context.md, Transcripts and
ReadTranscript): after a run, an actor whose transcript holds more than
`[transcripts] compact_after_entries` entries gets its oldest entries summarised
by `summary_profile` in a background task, one at a time per actor, so a run
never waits for it. The store journals the result before memory changes
(SessionStore.compact_transcript), so it survives a restart.

One summary request folds as many of the oldest entries as fit in the summary
model's window; the next run starts another when the transcript is still over.
A compaction that failed is tried again only once the transcript has grown a
quarter of the way from `keep_entries` to `compact_after_entries` further. The
embedded model generates one reply at a time, so a summary it is writing gives
way (is cancelled, and started again after a later run) when a run needs it.

Past `max_entries` (compaction off, failing or behind) the oldest entries are
dropped without a summary; prompts report them in left_out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

import msgspec

from sidecar.config import Config
from sidecar.context.compaction import bound_summary, events_to_fold, fold_count, summary_messages
from sidecar.errors import SidecarError
from sidecar.llm.gateway import ModelGateway
from sidecar.llm.types import Completion, Limits, ModelRequest, TextPiece
from sidecar.projection import Projection
from sidecar.runs.counters import RunCounters
from sidecar.state.model import Event, Session, TranscriptSummary

if TYPE_CHECKING:
    from sidecar.state.store import SessionStore

__all__ = ["Compactor"]

log = logging.getLogger("sidecar.runs")

#: Output tokens asked for a summary: a character is about a quarter of a token.
_TOKENS_PER_CHAR = 0.3


def _projection(session: Session, actor_id: str) -> Projection:
    """The actor's view for its summary; the narrator's is where the players are (what
    its narrations usually name: a narration's perception comes from what it names).
    Raises UnknownEntity / InvalidRequest for an actor removed or hidden since."""
    if actor_id:
        return Projection(session, actor_id)
    players = {e.id for e in session.world.entities.values() if e.kind == "player"}
    return Projection(session, "", named_ids=players)


def _leaving(session: Session, actor_id: str) -> tuple[list[tuple[int, Event]], int, Projection | None]:
    """The world events to fold into the actor's summary now (`events_to_fold`), and the
    view they were read with. Nothing, and no view built, until events have left past the
    cap: this runs after every run."""
    if not session.world.events_dropped:
        return [], 0, None
    try:
        proj = _projection(session, actor_id)
    except SidecarError:  # removed or hidden since: it has no prompt to summarise for
        return [], 0, None
    return (*events_to_fold(session, proj), proj)


class Compactor:
    def __init__(self, config: Config, store: SessionStore, gateway: ModelGateway, counters: RunCounters) -> None:
        self._config = config
        self._counters = counters
        self._cfg = config.transcripts
        self._store = store
        self._gateway = gateway
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        #: The summary profile of each compaction under way (to give the embedded model way).
        self._profiles: dict[tuple[str, str], str] = {}
        #: Transcript length at a failed compaction: no retry until it grows.
        self._failed: dict[tuple[str, str], int] = {}
        #: Compactions stored, and summary requests made (tests and benchmarks read them).
        self.done = 0
        self.requests = 0

    def after_run(self, session_id: str, actor_id: str) -> None:
        """Start a compaction of this actor's transcript when it is due (never waits)."""
        try:
            session = self._store.get(session_id)
        except SidecarError:
            return
        entries = session.transcripts.get(actor_id)
        if entries is None:
            return
        cfg = self._cfg
        key = (session_id, actor_id)
        if key in self._tasks:
            return
        n = len(entries)
        due = cfg.compact_after_entries and n > cfg.compact_after_entries
        failed = self._failed.get(key)
        if due and failed is not None and n < failed + max(1, (cfg.compact_after_entries - cfg.keep_entries) // 4):
            due = False
        # World events about to leave past the cap that the actor perceived are folded into
        # its summary before they go (issue 31: they were dropped and never summarised).
        events = bool(cfg.compact_after_entries) and bool(_leaving(session, actor_id)[0])
        if not (due or events or n > cfg.max_entries):
            return
        if failed is not None and n < failed:
            self._failed.pop(key, None)  # replaced meanwhile (an import): start afresh
        task = asyncio.get_running_loop().create_task(self._compact(session_id, actor_id, bool(due), events))
        self._tasks[key] = task
        task.add_done_callback(lambda _t: self._done(key))

    def _done(self, key: tuple[str, str]) -> None:
        self._tasks.pop(key, None)
        self._profiles.pop(key, None)

    def make_way(self, profile: str) -> None:
        """A run is about to use `profile`: if it is the embedded model, summaries it is
        writing stop (one generation at a time there; a run must not wait for one)."""
        if self._gateway.route(profile).kind != "local":
            return
        for key, task in list(self._tasks.items()):
            used = self._profiles.get(key)
            if used is not None and self._gateway.route(used).kind == "local":
                task.cancel()

    async def idle(self) -> None:
        """Wait for the compactions under way (tests; shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

    async def aclose(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        await self.idle()

    async def _compact(self, session_id: str, actor_id: str, entries_due: bool, events_due: bool) -> None:
        key = (session_id, actor_id)
        try:
            if entries_due or events_due:
                try:
                    if await self._summarise(session_id, actor_id, entries_due):
                        self._failed.pop(key, None)
                        return
                except SidecarError as exc:
                    log.warning(
                        "transcript compaction failed",
                        extra={"fields": {"session_id": session_id, "reason": exc.reason, "error": exc.message}},
                    )
                with contextlib.suppress(SidecarError):
                    self._failed[key] = len(self._store.get(session_id).transcripts.get(actor_id, ()))
            await self._cap(session_id, actor_id)
        except SidecarError:
            log.warning("transcript cap failed", exc_info=True, extra={"fields": {"session_id": session_id}})
        except Exception:  # noqa: BLE001 - a background task: logged, never lost silently
            log.exception("transcript compaction failed", extra={"fields": {"session_id": session_id}})

    async def _summarise(self, session_id: str, actor_id: str, entries_due: bool) -> bool:
        """Fold the oldest entries (when `entries_due`) and the leaving world events into
        the actor's summary; False when there was nothing to fold or the summary failed."""
        cfg = self._cfg
        session = self._store.get(session_id)
        entries = session.transcripts[actor_id]
        n = fold_count(entries, cfg.keep_entries) if entries_due else 0
        events, through, proj = _leaving(session, actor_id)
        if n == 0 and not events:
            return False
        if proj is None:
            proj = _projection(session, actor_id)  # a removed actor's entries: the failure is logged
        profile = cfg.summary_profile or session.options.profile or self._config.default_profile
        if profile not in self._config.profiles:
            profile = self._config.default_profile
        self._profiles[(session_id, actor_id)] = profile
        gateway = self._gateway
        await gateway.prepare_profile(profile)
        out_tokens = max(64, int(cfg.summary_max_chars * _TOKENS_PER_CHAR))
        room = gateway.context_window(profile) - out_tokens
        count = gateway.token_counter(profile)
        messages, n, folded = summary_messages(session, proj, entries[:n], cfg.summary_max_chars, count, room, events)
        if folded < len(events):
            through = events[folded][0]  # what did not fit waits for the next summary
        if n == 0 and not folded:
            return False
        limits = Limits(max_output_tokens=out_tokens, temperature=0.0)
        self.requests += 1
        request = ModelRequest(gateway.target(profile), messages, limits, proj.engine_ids, aliases=proj.alias_mask)
        pieces: list[str] = []
        done: Completion | None = None
        async for piece in self._gateway.stream(request):
            if isinstance(piece, TextPiece):
                pieces.append(piece.text)
            elif isinstance(piece, Completion):
                done = piece
                break
        if done is not None:
            self._counters.summary(session_id, actor_id, done)
        if done is not None and done.finish_reason == "length":
            # A summary cut mid-sentence would stand for those entries for good: refused, and
            # tried again once the transcript has grown (as a failed one).
            log.warning(
                "transcript summary refused: cut at the output limit",
                extra={"fields": {"session_id": session_id, "max_output_tokens": out_tokens, "profile": profile}},
            )
            return False
        text = bound_summary("".join(pieces), cfg.summary_max_chars)
        if not text:
            return False
        previous = session.summaries.get(actor_id) or TranscriptSummary()
        summary = msgspec.structs.replace(
            previous,
            text=text,
            summarised=previous.summarised + n,
            events_through=max(through, previous.events_through),
            events_summarised=previous.events_summarised + folded,
        )
        if not await self._store.compact_transcript(session_id, actor_id, entries, n, summary):
            return True  # the transcript was replaced meanwhile: nothing to fold any more
        self.done += 1
        return True

    async def _cap(self, session_id: str, actor_id: str) -> None:
        session = self._store.get(session_id)
        entries = session.transcripts.get(actor_id, [])
        over = len(entries) - self._cfg.max_entries
        if over <= 0:
            return
        n = over
        while n < len(entries) and entries[n].role in ("actor", "narrator"):
            n += 1
        previous = session.summaries.get(actor_id) or TranscriptSummary()
        summary = msgspec.structs.replace(previous, dropped=previous.dropped + n)
        await self._store.compact_transcript(session_id, actor_id, entries, n, summary)

