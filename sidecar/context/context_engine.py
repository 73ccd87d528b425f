"""The context engine: select -> project -> budget -> render, with caches.

`ContextEngine.prepare` turns a session and a RunSpec into a PreparedRun: the
exact, projected messages within the token budget, plus what the run needs to
judge and record the reply. A prompt whose inputs did not change since the last
call (same revision, transcript length, notes, templates, budget) is served
from a cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

import sidecar.context.prefix_state as prefix_state
from sidecar.config import Config
from sidecar.context.budget import fit
from sidecar.context.compaction import cap_left_out
from sidecar.context.context_index import ContextIndex, context_index
from sidecar.context.contract import (
    ContinueInput,
    Prompt,
    RunSpec,
    TokenCounter,
)
from sidecar.context.fitted import SEP, Fitted
from sidecar.context.history import HistoryCache
from sidecar.context.input_parts import event_place, focus_of, input_text, named_ids
from sidecar.context.layout import LayoutInputs, Sticky, build_layout
from sidecar.context.lorefiles import LoreFiles
from sidecar.context.parts import Entered, Layout
from sidecar.context.persona_slots import persona_text
from sidecar.context.prepared import Prepared
from sidecar.context.select import Shown
from sidecar.context.selection_caches import MemoryLineCache, SceneCache
from sidecar.context.session_lru import SessionLRU
from sidecar.context.timeline import TimelineCache
from sidecar.context.tokens import CountCache
from sidecar.context.window import Selection
from sidecar.errors import InvalidRequest
from sidecar.projection import Projection
from sidecar.projection.session_index import index_for
from sidecar.prompts.persona import PersonaRenderer
from sidecar.prompts.templates import TemplateStore
from sidecar.state.model import Session

__all__ = ["ContextEngine", "resolve_budget"]

_PROMPT_CACHE_SIZE = 256


def resolve_budget(spec: RunSpec, session: Session, config: Config, model_budget: int) -> int:
    """RunSpec, then session options, then config, then the model's window budget;
    an override never exceeds what the model can take."""
    for value in (spec.budget_tokens, session.options.budget_tokens, config.context.budget_tokens):
        if value and value > 0:
            return min(value, model_budget) if model_budget > 0 else value
    if model_budget <= 0:
        raise InvalidRequest("no token budget: the run, session, config and model give none")
    return model_budget


@dataclass(frozen=True)
class _Cached:
    prompt: Prompt
    shown: frozenset[str]
    #: None when the prompt held no history.
    history: Selection | None
    lore_keys: frozenset[str]
    memory_keys: frozenset[tuple[int, str]]
    #: Lore in the history with its line (parts.Entered), oldest first.
    entered: tuple[Entered, ...]
    #: The session index it was built from: identity check against id() reuse.
    base: object


class ContextEngine:
    """One per sidecar; thread-safe for the parts that cache."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.templates = TemplateStore(config.context.templates_dir)
        self.personas = PersonaRenderer()
        self.lore_files = LoreFiles(config.context.lore_dir)
        self._counts = CountCache()
        #: Rendered transcripts per actor (history turns).
        self.history = HistoryCache()
        #: Transcript + perceived world events per actor (the history share's timeline).
        self.timelines = TimelineCache()
        self._lock = threading.Lock()
        self._prompts: SessionLRU[tuple[object, ...], _Cached] = SessionLRU(_PROMPT_CACHE_SIZE)
        self.scenes = SceneCache(_PROMPT_CACHE_SIZE)
        self.memory_lines = MemoryLineCache()
        #: Prompts built from scratch / served from the cache (benchmark and tests read these).
        self.builds = 0
        self.cache_hits = 0

    def prepare(
        self,
        session: Session,
        spec: RunSpec,
        *,
        count_tokens: TokenCounter,
        budget_tokens: int,
        preview: bool = False,
        framing: str = "",
    ) -> Prepared:
        """The PreparedRun for `spec`. `preview=True` (PreviewPrompt) leaves no trace.
        `framing`: text the serving model's prompt format sends besides the messages
        (the local model's worked example); the budget counts it.

        Raises UnknownEntity (actor, focus or input entity not in the session),
        InvalidRequest (bad persona template), ContextWindowExceeded (the fixed
        part alone is over the budget)."""
        if isinstance(spec.input, ContinueInput):
            _check_continuable(session, spec.actor_id)
        count = self._counts.get(count_tokens)
        self.lore_files.refresh()
        budget = resolve_budget(spec, session, self.config, budget_tokens)
        proj = Projection(session, spec.actor_id, named_ids=named_ids(spec, session))
        base = index_for(session)
        # What the actor's last prompt held is kept in the session (exported with it).
        held = prefix_state.read(session, spec.actor_id)
        sticky = Sticky(held.history, held.lore, held.memories, held.entered)
        persona_version = self._persona_version(session, spec.actor_id)
        # The state the prompt is built from: once the actor's transcript or the session
        # moves on, prompts of the older state can never be hit again (SessionLRU drops them).
        transcript = session.transcripts.get(spec.actor_id)
        state = (id(session), id(base), id(transcript), len(transcript or ()))
        key = (
            session.id,  # first in every per-session cache key: forget_session drops by it
            *state,
            spec.actor_id,
            spec.input,
            spec.focus_ids,
            spec.moment,
            session.notes.get(spec.actor_id),
            msgspec.json.encode(session.options),
            budget,
            id(count_tokens),
            persona_version,
            self.lore_files.version,
            sticky,
            framing,
        )
        with self._prompts.lock:
            cached = self._prompts.get(key)
            if cached is not None:
                self._prompts.touch(key)
        if cached is not None and cached.base is base:
            self.cache_hits += 1
            entry = cached
        else:
            cidx = context_index(session, base)
            inputs = self._inputs(session, spec, proj, cidx)
            fitted, shown, layout = self._fit(session, spec, proj, cidx, sticky, budget, count, framing, inputs)
            # When the window moves, waiting lore joins the block, as does lore whose line
            # the window no longer holds; when the recall would resend half the memory share
            # uncached every turn, the memory block takes it. Each re-caches the history once.
            folded = (fitted.deferred or fitted.entered_left) and fitted.window_moved or fitted.recall_heavy
            if folded:
                # The history re-caches this turn anyway: waiting lore and memories join the blocks.
                fitted, shown, layout = self._fit(
                    session, spec, proj, cidx, sticky, budget, count, framing, inputs, fold=True
                )
            self.builds += 1
            start = fitted.history if fitted.has_history else None
            entered = () if folded else layout.entered
            if fitted.entering is not None and layout.said and not folded:
                index = len(session.transcripts.get(spec.actor_id, ()))
                entered = (*entered, Entered(index, layout.said, *fitted.entering))
            entry = _Cached(
                fitted.prompt, frozenset(shown.aliases), start, fitted.lore_keys, fitted.memory_keys, entered, base
            )
            self._prompts.put(key, entry, scope=(session.id, spec.actor_id), generation=state)
        if not preview:
            # A run remembers what its prompt held (also when a preview built it first).
            self._remember(session, spec.actor_id, held, entry)
        prepared = Prepared(session, spec, proj, _copy(entry.prompt), entry.shown, count, budget, framing)
        if not preview:
            prepared.prepare_names()  # here, off the event loop: the run's text is dealiased with it
        return prepared

    def _inputs(self, session: Session, spec: RunSpec, proj: Projection, cidx: ContextIndex) -> LayoutInputs:
        """What the layout needs from the caches, looked up once per build."""
        named = tuple(sorted(named_ids(spec, session)))
        actor = session.world.entities.get(spec.actor_id) if spec.actor_id else None
        rendered = self.history.items(session, proj, cidx.base, named)
        # The actor's transcript and the world events it perceived, in order (docs/context.md).
        timeline = self.timelines.get(session, proj, cidx, rendered, named)
        persona = persona_text(self.templates, self.personas, session, proj, actor, timeline.newest_event)
        moment = proj.moment_text(spec.moment)
        place = event_place(session, spec)
        scene, aliases = self.scenes.get(
            session, proj, cidx, actor, focus_of(spec), moment, named, input_text(spec), place
        )
        return LayoutInputs(
            timeline,
            persona,
            scene,
            aliases,
            self.memory_lines.get(cidx, proj, named),
            self.lore_files.matcher,
            self.config.context.stable_setting,
        )

    def _fit(
        self,
        session: Session,
        spec: RunSpec,
        proj: Projection,
        cidx: ContextIndex,
        sticky: Sticky,
        budget: int,
        count: Callable[[str], int],
        framing: str,
        inputs: LayoutInputs,
        fold: bool = False,
    ) -> tuple[Fitted, Shown, Layout]:
        layout, shown = build_layout(session, spec, proj, cidx, sticky, budget, inputs, fold)
        # What the events cap, the transcript cap and compaction took (issue 23).
        layout.left_out.extend(cap_left_out(session, spec.actor_id))
        # +1: where the format joins it to the system text, tokens may not split the same way.
        layout.framing_tokens = count(SEP + framing) + 1 if framing else 0
        return fit(layout, budget, count), shown, layout

    def _remember(self, session: Session, actor_id: str, held: prefix_state.PrefixState, entry: _Cached) -> None:
        history = entry.history if entry.history is not None else held.history
        state = prefix_state.PrefixState(history, entry.lore_keys, entry.memory_keys, entry.entered)
        if state != held:
            with self._lock:
                prefix_state.write(session, actor_id, state)

    def _persona_version(self, session: Session, actor_id: str) -> str:
        binding = session.world.personas.get(actor_id)
        if binding is None or binding.inline is not None or not binding.template_name:
            return ""
        return self.templates.get(binding.template_name).version

    def forget_session(self, session_id: str) -> None:
        """Drop everything cached for a session (`sidecar.sessions.close_session` calls it):
        the size bounds alone would keep a closed session's prompts, scenes and
        histories, and the worlds they reference, alive until pushed out."""
        self._prompts.forget(session_id)
        self.history.forget(session_id)
        self.timelines.forget(session_id)
        self.scenes.forget(session_id)
        self.memory_lines.forget(session_id)

    def cached_entries(self) -> int:
        """How many entries all per-session caches hold (tests and benchmarks read it)."""
        return len(self._prompts) + len(self.history) + len(self.timelines) + len(self.scenes) + len(self.memory_lines)


def _check_continuable(session: Session, actor_id: str) -> None:
    """A Continue needs something to carry on: a reply of this actor, or its summary."""
    entries = session.transcripts.get(actor_id, ())
    if any(e.role in ("actor", "narrator") for e in entries) or actor_id in session.summaries:
        return
    who = f"actor {actor_id!r}" if actor_id else "the narrator"
    raise InvalidRequest(f"nothing to continue: {who} has no reply in session {session.id!r} yet")


def _copy(prompt: Prompt) -> Prompt:
    # The message dicts are shared with the cached prompt (copying each one cost ~1 µs a
    # message, every run): nothing of ours writes to a message, and the litellm route
    # hands litellm copies of its own (sidecar/llm/via_litellm.py).
    return Prompt(
        messages=list(prompt.messages),
        sections=list(prompt.sections),
        budget_tokens=prompt.budget_tokens,
        prompt_tokens=prompt.prompt_tokens,
        left_out=list(prompt.left_out),
    )


__all__ += ["Layout"]
