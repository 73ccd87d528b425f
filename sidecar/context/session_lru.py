"""The one shape of the context engine's per-session caches: a bounded map whose
keys start with the session ID, so a closed session's entries can be dropped
(`ContextEngine.forget_session`, called by `sidecar.sessions.close_session`)
instead of staying alive, with the worlds they reference, until pushed out.

An entry built from one state of a session (a revision's index, an actor's
transcript as it stood) can only be hit by a run planned on that state. Once a
run brings a newer state, the older entries are dead weight that `maxsize` alone
keeps until pushed out: a 300-run soak grew by a prompt, a scene and a timeline
per turn until the bounds (issue 30, item 3). Stored with a `scope` (what the
entry belongs to: the session, or the session and an actor) and a `generation`
(the state it was built from, by value: identities as ints), an entry goes as
soon as one of a newer generation is stored in its scope.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

__all__ = ["SessionLRU"]

K = TypeVar("K", bound=tuple[Any, ...])
V = TypeVar("V")


class SessionLRU(Generic[K, V]):
    """Least recently stored or touched entries go first past `maxsize`; entries of
    an older generation go when a newer one is stored in their scope. `lock` is
    re-entrant: a cache that reads, renders and stores as one step holds it around
    the three; each method takes it too."""

    def __init__(self, maxsize: int) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()
        self._maxsize = maxsize
        self.lock = threading.RLock()
        #: The scope each scoped entry was stored in, and each scope's generation.
        self._scope_of: dict[K, tuple[Hashable, ...]] = {}
        self._generation: dict[tuple[Hashable, ...], Hashable] = {}

    def get(self, key: K) -> V | None:
        with self.lock:
            return self._items.get(key)

    def put(self, key: K, value: V, scope: tuple[Hashable, ...] | None = None, generation: Hashable = None) -> None:
        """Store `value`. With a `scope` (a tuple that starts with the session ID) and
        the `generation` it was built from: a generation other than the scope's last
        one drops the scope's older entries first (a run on an older state, finishing
        late, only costs the newer entries a rebuild)."""
        with self.lock:
            if scope is not None:
                if self._generation.get(scope, generation) != generation:
                    for old in [k for k, s in self._scope_of.items() if s == scope]:
                        self._drop(old)
                self._generation[scope] = generation
                self._scope_of[key] = scope
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._maxsize:
                self._drop(next(iter(self._items)))

    def touch(self, key: K) -> None:
        with self.lock:
            self._items.move_to_end(key)

    def forget(self, session_id: Hashable) -> None:
        with self.lock:
            for key in [k for k in self._items if k[0] == session_id]:
                self._drop(key)
            for scope in [s for s in self._generation if s[0] == session_id]:
                del self._generation[scope]

    def _drop(self, key: K) -> None:
        self._items.pop(key, None)
        self._scope_of.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)
