"""The one shape of the context engine's per-session caches: a bounded map whose
keys start with the session ID, so a closed session's entries can be dropped
(`ContextEngine.forget_session`, called by `sidecar.sessions.close_session`)
instead of staying alive, with the worlds they reference, until pushed out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, MutableMapping
from typing import Any, Generic, TypeVar

__all__ = ["SessionLRU", "drop_session"]

K = TypeVar("K", bound=tuple[Any, ...])
V = TypeVar("V")


def drop_session(cache: MutableMapping[K, Any], session_id: Hashable) -> None:
    """Delete every entry of `cache` whose key starts with `session_id`."""
    for key in [k for k in cache if k[0] == session_id]:
        del cache[key]


class SessionLRU(Generic[K, V]):
    """Least recently stored or touched entries go first past `maxsize`. `lock` is
    re-entrant: a cache that reads, renders and stores as one step holds it around
    the three; each method takes it too."""

    def __init__(self, maxsize: int) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()
        self._maxsize = maxsize
        self.lock = threading.RLock()

    def get(self, key: K) -> V | None:
        with self.lock:
            return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        with self.lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._maxsize:
                self._items.popitem(last=False)

    def touch(self, key: K) -> None:
        with self.lock:
            self._items.move_to_end(key)

    def forget(self, session_id: Hashable) -> None:
        with self.lock:
            drop_session(self._items, session_id)

    def __len__(self) -> int:
        return len(self._items)
