"""Per-revision caches of the two costliest selections of a prompt: the scene
lines (select.scene_lines) and the memory lines the memory bank ranks. Every key
starts with the session ID, so `forget` drops a closed session's entries.
"""

from __future__ import annotations

from collections.abc import Callable

from sidecar.context.context_index import ContextIndex, memory_key
from sidecar.context.select import SceneLines, Shown, scene_lines
from sidecar.context.session_lru import SessionLRU
from sidecar.projection import Projection
from sidecar.prompts.escape import one_line
from sidecar.state.model import Entity, Memory, Session

__all__ = ["MemoryLineCache", "SceneCache"]

_SceneKey = tuple[str, int, str, tuple[str, ...], str, tuple[str, ...], str]
_MemoryKey = tuple[str, int, str, tuple[str, ...]]


class SceneCache:
    """`select.scene_lines`, cached per revision, actor, focus and moment (and the
    input, only when it ranked a crowd): the scene is the costliest selection and
    rarely changes within a dialogue."""

    def __init__(self, maxsize: int = 1024) -> None:
        self._cache: SessionLRU[_SceneKey, tuple[object, SceneLines, frozenset[str], str]] = SessionLRU(maxsize)

    def get(
        self,
        session: Session,
        proj: Projection,
        cidx: ContextIndex,
        actor: Entity | None,
        focus: list[str],
        moment_text: str,
        named: tuple[str, ...],
        query: str,
        place: str = "",
    ) -> tuple[SceneLines, frozenset[str]]:
        """The scene lines and the aliases they show (`place`: where the narrated event happens)."""
        key = (session.id, id(cidx.base), proj.actor_id, tuple(focus), moment_text, named, place)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is cidx.base and (not hit[1].ranked_by_input or hit[3] == query):
            return hit[1], hit[2]
        shown = Shown()
        lines = scene_lines(session, proj, cidx, shown, actor, focus, moment_text, query, place)
        aliases = frozenset(shown.aliases)
        self._cache.put(key, (cidx.base, lines, aliases, query), scope=(session.id,), generation=id(cidx.base))
        return lines, aliases

    def forget(self, session_id: str) -> None:
        self._cache.forget(session_id)

    def __len__(self) -> int:
        return len(self._cache)


class MemoryLineCache:
    """A memory as its prompt line, memoized per revision, actor and named IDs: the
    memory bank ranks hundreds of candidates per prompt."""

    def __init__(self, maxsize: int = 64) -> None:
        self._cache: SessionLRU[_MemoryKey, tuple[object, dict[tuple[int, str], str]]] = SessionLRU(maxsize)

    def get(self, cidx: ContextIndex, proj: Projection, named: tuple[str, ...]) -> Callable[[Memory], str]:
        key = (proj.session.id, id(cidx.base), proj.actor_id, named)
        with self._cache.lock:
            hit = self._cache.get(key)
            if hit is None or hit[0] is not cidx.base:
                hit = (cidx.base, {})
                self._cache.put(key, hit, scope=(proj.session.id, proj.actor_id), generation=id(cidx.base))
        lines = hit[1]

        def line(mem: Memory) -> str:
            k = memory_key(mem)
            text = lines.get(k)
            if text is None:
                text = lines[k] = f"- {one_line(proj.text(mem.text))}"
            return text

        return line

    def forget(self, session_id: str) -> None:
        self._cache.forget(session_id)

    def __len__(self) -> int:
        return len(self._cache)
