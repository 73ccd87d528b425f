"""The context engine: select -> project -> budget -> render, with caches.

`ContextEngine.prepare` turns a session and a RunSpec into a PreparedRun: the
exact, projected messages within the token budget, plus what the run needs to
judge and record the reply. A prompt whose inputs did not change since the last
call (same revision, transcript length, notes, templates, budget) is served
from a cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import msgspec

from sidecar.config import Config
from sidecar.context.budget import SEP, Fitted, fit
from sidecar.context.context_index import ContextIndex, context_index, memory_key
from sidecar.context.contract import (
    Prompt,
    RunSpec,
    TokenCounter,
)
from sidecar.context.history import HistoryCache
from sidecar.context.layout import Sticky, build_layout, named_ids
from sidecar.context.lorefiles import LoreFiles
from sidecar.context.parts import Layout
from sidecar.context.prepared import Prepared
from sidecar.context.select import SceneLines, Shown, scene_lines
from sidecar.context.timeline import TimelineCache
from sidecar.context.tokens import CountCache
from sidecar.errors import InvalidRequest
from sidecar.projection import Projection
from sidecar.projection.session_index import index_for
from sidecar.prompts.escape import one_line
from sidecar.prompts.persona import PersonaRenderer
from sidecar.prompts.templates import TemplateStore
from sidecar.state.model import Entity, Memory, Session

__all__ = ["ContextEngine", "resolve_budget"]

_PROMPT_CACHE_SIZE = 1024
_STICKY_LIMIT = 65_536


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
    history_start: int | None
    lore_keys: frozenset[str]
    memory_keys: frozenset[tuple[int, str]]
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
        #: (session id, session object id, actor) -> first history index of the last prompt (prefix stability).
        self._sticky: dict[tuple[str, int, str], int] = {}
        #: Same key -> lore card keys of the last prompt (lore hysteresis).
        self._lore: dict[tuple[str, int, str], frozenset[str]] = {}
        #: Same key -> memory keys of the last prompt's memory block (kept while relevant).
        self._memories: dict[tuple[str, int, str], frozenset[tuple[int, str]]] = {}
        self._prompts: OrderedDict[tuple[object, ...], _Cached] = OrderedDict()
        #: -> (base index, lines, aliases shown, query).
        self._scenes: OrderedDict[tuple[object, ...], tuple[object, SceneLines, frozenset[str], str]] = OrderedDict()
        self._memory_lines: OrderedDict[tuple[object, ...], tuple[object, dict[tuple[int, str], str]]] = OrderedDict()
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
        count = self._counts.get(count_tokens)
        self.lore_files.refresh()
        budget = resolve_budget(spec, session, self.config, budget_tokens)
        proj = Projection(session, spec.actor_id, named_ids=named_ids(spec))
        base = index_for(session)
        # The session object too: an imported session with the same ID starts afresh.
        sticky_key = (session.id, id(session), spec.actor_id)
        sticky = Sticky(
            self._sticky.get(sticky_key),
            self._lore.get(sticky_key, frozenset()),
            self._memories.get(sticky_key, frozenset()),
        )
        persona_version = self._persona_version(session, spec.actor_id)
        key = (
            session.id,  # first in every per-session cache key: forget_session drops by it
            id(session),
            id(base),
            spec.actor_id,
            spec.input,
            spec.focus_ids,
            spec.moment,
            len(session.transcripts.get(spec.actor_id, ())),
            id(session.transcripts.get(spec.actor_id)),
            session.notes.get(spec.actor_id),
            msgspec.json.encode(session.options),
            budget,
            id(count_tokens),
            persona_version,
            self.lore_files.version,
            sticky,
            framing,
        )
        with self._lock:
            cached = self._prompts.get(key)
            if cached is not None:
                self._prompts.move_to_end(key)
        if cached is not None and cached.base is base:
            self.cache_hits += 1
            entry = cached
        else:
            cidx = context_index(session, base)
            fitted, shown = self._fit(session, spec, proj, cidx, sticky, budget, count, framing, fold=False)
            if fitted.deferred and fitted.window_moved:
                # The history re-caches this turn anyway: waiting lore and memories join the blocks.
                fitted, shown = self._fit(session, spec, proj, cidx, sticky, budget, count, framing, fold=True)
            self.builds += 1
            start = fitted.history_start if fitted.has_history else None
            entry = _Cached(fitted.prompt, frozenset(shown.aliases), start, fitted.lore_keys, fitted.memory_keys, base)
            with self._lock:
                self._prompts[key] = entry
                while len(self._prompts) > _PROMPT_CACHE_SIZE:
                    self._prompts.popitem(last=False)
        if not preview:
            # A run remembers what its prompt held (also when a preview built it first).
            self._remember(sticky_key, entry)
        return Prepared(session, spec, proj, _copy(entry.prompt), entry.shown, count, budget, framing)

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
        fold: bool,
    ) -> tuple[Fitted, Shown]:
        layout, shown = build_layout(self, session, spec, proj, cidx, sticky, budget, fold)
        # +1: where the format joins it to the system text, tokens may not split the same way.
        layout.framing_tokens = count(SEP + framing) + 1 if framing else 0
        return fit(layout, budget, count), shown

    def _remember(self, sticky_key: tuple[str, int, str], entry: _Cached) -> None:
        with self._lock:
            if max(len(self._sticky), len(self._lore), len(self._memories)) > _STICKY_LIMIT:
                # Sessions that closed without forget_session: start over rather than grow.
                self._sticky.clear()
                self._lore.clear()
                self._memories.clear()
            if entry.history_start is not None:
                self._sticky[sticky_key] = entry.history_start
            self._lore[sticky_key] = entry.lore_keys
            self._memories[sticky_key] = entry.memory_keys

    def scene_for(
        self,
        session: Session,
        proj: Projection,
        cidx: ContextIndex,
        shown: Shown,
        actor: Entity | None,
        focus: list[str],
        moment_text: str,
        named: tuple[str, ...],
        query: str,
    ) -> SceneLines:
        """`select.scene_lines`, cached per revision, actor, focus and moment (and the
        input, only when it ranked a crowd): the scene is the costliest selection and
        rarely changes within a dialogue."""
        key = (session.id, id(cidx.base), proj.actor_id, tuple(focus), moment_text, named)
        hit = self._scenes.get(key)
        if hit is not None and hit[0] is cidx.base and (not hit[1].ranked_by_input or hit[3] == query):
            shown.aliases.update(hit[2])
            return hit[1]
        mine = Shown()
        lines = scene_lines(session, proj, cidx, mine, actor, focus, moment_text, query)
        shown.aliases.update(mine.aliases)
        with self._lock:
            self._scenes[key] = (cidx.base, lines, frozenset(mine.aliases), query)
            while len(self._scenes) > _PROMPT_CACHE_SIZE:
                self._scenes.popitem(last=False)
        return lines

    def memory_lines(self, cidx: ContextIndex, proj: Projection, named: tuple[str, ...]) -> Callable[[Memory], str]:
        """Renders a memory as its prompt line, memoized per revision, actor and named
        IDs: the memory bank ranks hundreds of candidates per prompt."""
        key = (proj.session.id, id(cidx.base), proj.actor_id, named)
        with self._lock:
            hit = self._memory_lines.get(key)
            if hit is None or hit[0] is not cidx.base:
                hit = (cidx.base, {})
                self._memory_lines[key] = hit
                while len(self._memory_lines) > 64:
                    self._memory_lines.popitem(last=False)
        lines = hit[1]

        def line(mem: Memory) -> str:
            k = memory_key(mem)
            text = lines.get(k)
            if text is None:
                text = lines[k] = f"- {one_line(proj.text(mem.text))}"
            return text

        return line

    def _persona_version(self, session: Session, actor_id: str) -> str:
        binding = session.world.personas.get(actor_id)
        if binding is None or binding.inline is not None or not binding.template_name:
            return ""
        return self.templates.get(binding.template_name).version

    def forget_session(self, session_id: str) -> None:
        """Drop everything cached for a session (`sidecar.sessions.close_session` calls it):
        the size bounds alone would keep a closed session's prompts, scenes and
        histories, and the worlds they reference, alive until pushed out."""
        with self._lock:
            for cache in self._per_session():
                for k in [k for k in cache if k[0] == session_id]:
                    del cache[k]
        self.history.forget(session_id)
        self.timelines.forget(session_id)

    def cached_entries(self) -> int:
        """How many entries all per-session caches hold (tests and benchmarks read it)."""
        with self._lock:
            held = sum(len(c) for c in self._per_session())
        return held + len(self.history) + len(self.timelines)

    def _per_session(self) -> tuple[MutableMapping[Any, Any], ...]:
        # Every key starts with the session ID (the value types differ: Any).
        return (self._sticky, self._lore, self._memories, self._prompts, self._scenes, self._memory_lines)


def _copy(prompt: Prompt) -> Prompt:
    return Prompt(
        messages=[dict(m) for m in prompt.messages],
        sections=list(prompt.sections),
        budget_tokens=prompt.budget_tokens,
        prompt_tokens=prompt.prompt_tokens,
        left_out=list(prompt.left_out),
    )


__all__ += ["Layout"]
