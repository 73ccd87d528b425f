"""The leak guard: the last check before a request leaves for a model.

The projection keeps engine IDs out of prompts by construction; this is the
defence in depth behind it. `check_request` searches the whole outgoing
request (messages, stop sequences and every other field but the few the
sidecar's own config sets) for the session's engine IDs and the suppressed
parts of the game moment, and raises PrivacyLeakBlocked when it finds one, so
the request is never sent. Finding one is a bug: it is logged with where it
was (message index and role, or the field's name), never the ID.

Each transport calls it on the very object it is about to send
(`sidecar.llm.send_points.send_point` for litellm's and the in-process models',
`sidecar.llm.sse` for the SSE body).

What counts as an occurrence is the rule of `sidecar.idsearch`
(folded: case, NFKC and invisible characters; short or word-like IDs are not
searched), and only where game text could have put it: an engine ID's text
inside an alias the session issued (`pc_1` in `npc_1`), a generic word the
projection writes ("somewhere") or one of the project's own words
(`sidecar.prompts.fixed`: "Identity", "narrator") is not one. The matcher is
built once per ID set and cached (`Projection.engine_ids` is the very set the
projection's own matcher was built for, so a check costs one pass per string);
the masks are only consulted once an ID's text was found.

A pure function of its arguments: it may run on any thread, and `run_check` says
on which: a big request's check runs in a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from sidecar.errors import PrivacyLeakBlocked
from sidecar.idsearch import IdMatcher, Mask, matcher_for, searchable
from sidecar.projection.projection import GENERIC_WORDS
from sidecar.prompts.fixed import FIXED_MASK
from sidecar.state.model import Moment

__all__ = ["check_outgoing", "check_request", "request_checker", "run_check", "CONFIG_KEYS", "GUARD_THREAD_CHARS"]

log = logging.getLogger(__name__)

#: Request fields set from the sidecar's own config, never from game data: the
#: model string, where it is served and its key; the embedded model's reply shape and
#: sampling. Not searched (a key is a secret of its own and must not reach a log line
#: either; the others' reprs are mostly our words, which a game's engine ID could
#: match). A shape's parameter schemas hold game text already projected (aliases, enum
#: values as the prompt shows them), except a string parameter's `pattern`, which the
#: prompt's own copy exposes to the search; one holding an engine ID's text is refused as
#: INVALID_REQUEST before that (sidecar.context.action_params.describe).
CONFIG_KEYS = frozenset({"model", "api_base", "api_key", "reply_shape", "sampling"})

#: What the projection and the prompt's fixed text write: never an engine ID.
_OWN_WORDS = FIXED_MASK.plus(Mask(GENERIC_WORDS))


def check_request(
    request: Mapping[str, Any],
    engine_ids: Iterable[str],
    *,
    moment: Moment | None = None,
    aliases: Mask | None = None,
) -> None:
    """Raise PrivacyLeakBlocked when any field of an outgoing model request holds
    an engine ID or a suppressed moment part.

    Every field but `CONFIG_KEYS` is searched, whatever its shape: every string
    in it (dict keys and values, list items, at any depth) is checked. In
    `messages`, every key of a message but "role" is searched. `moment`: the
    parts of the game moment that must not reach the model (pass
    `Projection.guard_moment(spec.moment)`, which blanks the exposed parts).
    `aliases`: the session's issued aliases (`Projection.alias_mask`); an engine
    ID's text inside one of them, or inside the project's own words, is not a leak.
    """
    ids = engine_ids if isinstance(engine_ids, frozenset) else frozenset(engine_ids)
    search = _Search(
        matcher_for(ids), _OWN_WORDS if aliases is None else aliases.plus(_OWN_WORDS), _moment_matcher(moment)
    )
    for name, value in request.items():
        if name in CONFIG_KEYS or value is None:
            continue
        if name == "messages" and isinstance(value, list):
            _check_messages(value, search)
            continue
        # Stop sequences, tools, metadata, the user field...: a request is refused on
        # what it holds, not on where the guard expected to find it.
        what = search.found(_strings(value))
        if what is not None:
            _blocked(what, {"field": name, "kind": what}, f"field {name!r}")


def check_outgoing(
    messages: list[dict[str, Any]],
    engine_ids: Iterable[str],
    *,
    moment: Moment | None = None,
    aliases: Mask | None = None,
) -> None:
    """`check_request` for a request that is only messages."""
    check_request({"messages": messages}, engine_ids, moment=moment, aliases=aliases)


def request_checker(
    engine_ids: Iterable[str], moment: Moment | None, aliases: Mask | None = None
) -> Callable[[Mapping[str, Any]], None]:
    """`check_request` bound to one run's IDs, moment and aliases, for a transport to
    call on the object it is about to send."""
    ids = engine_ids if isinstance(engine_ids, frozenset) else frozenset(engine_ids)
    return lambda request: check_request(request, ids, moment=moment, aliases=aliases)


class _Search:
    """The engine-ID matcher, what it must not count (aliases, the project's words),
    and the moment's matcher; a text is folded once for both."""

    __slots__ = ("ids", "mask", "moment")

    def __init__(self, ids: IdMatcher, mask: Mask, moment: tuple[tuple[str, ...], IdMatcher] | None) -> None:
        self.ids = ids
        self.mask = mask
        self.moment = moment

    def kind(self, text: str) -> str | None:
        """What `text` holds: "engine_id", "moment" or None."""
        # Most of a prompt (the system part, the history) is the same text request after
        # request: the matcher remembers texts that hold no ID's text at all.
        if not self.ids.clean(text) and self.ids.first(text, self.mask) is not None:
            return "engine_id"
        moment = self.moment
        # Moment parts as written (a new matcher each run could remember nothing): a
        # substring test first, the edge rule (a tick inside a longer number is none) after.
        if moment is not None and any(v in text for v in moment[0]) and moment[1].first(text) is not None:
            return "moment"
        return None

    def found(self, texts: Iterable[str]) -> str | None:
        for text in texts:
            what = self.kind(text)
            if what is not None:
                return what
        return None


def _check_messages(messages: list[Any], search: _Search) -> None:
    # A first pass over the texts alone (this is on the way to the first token; texts seen
    # before cost a set lookup); only a hit, which is rare, needs the pass below to say where.
    if search.found(_message_texts(messages)) is None:
        return
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            parts: Iterable[tuple[str, Any]] = [("", message)]
            role = ""
        else:
            parts = message.items()
            role = str(message.get("role", ""))
        for key, value in parts:
            if key == "role" or not value:
                continue
            what = search.found(_strings(value))
            if what is not None:
                _blocked(
                    what,
                    {"message_index": index, "role": role, "key": key, "kind": what},
                    f"message {index}",
                    {"message_index": str(index), "kind": what},
                )


def _message_texts(messages: list[Any]) -> list[str]:
    """Every string `_check_messages` searches (a loop, not generators: ~2x faster here)."""
    out: list[str] = []
    for message in messages:
        if not isinstance(message, Mapping):
            if message:
                out.extend(_strings(message))
            continue
        for key, value in message.items():
            if key == "role" or not value:
                continue
            if type(value) is str:
                out.append(value)
            else:
                out.extend(_strings(value))
    return out


def _strings(value: Any) -> Iterator[str]:
    """Every string inside `value` (dict keys too). Numbers and booleans are not game
    text here (token limits, temperature): searching them would only find coincidences."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str):
                yield k
            yield from _strings(v)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _strings(item)
    elif value is not None and not isinstance(value, bool | int | float):
        yield str(value)


def _blocked(what: str, fields: dict[str, Any], where: str, metadata: dict[str, str] | None = None) -> None:
    log.error("privacy leak blocked: outgoing model request contains an %s", what, extra={"fields": fields})
    raise PrivacyLeakBlocked(
        f"the request to the model was not sent: {where} contained an {what} (a projection bug; logged)",
        metadata=metadata or {k: str(v) for k, v in fields.items()},
    )


def _moment_matcher(moment: Moment | None) -> tuple[tuple[str, ...], IdMatcher] | None:
    if moment is None:
        return None
    values = [moment.timeline, moment.calendar]
    if moment.tick:
        values.append(str(moment.tick))
    values = [v for v in values if v and searchable(v)]
    return (tuple(values), IdMatcher(values)) if values else None


#: Characters of message text past which the leak guard runs in a worker thread: it
#: reads every string of the request once, about a millisecond per 100 KB, and a
#: heavy prompt's check must not hold the loop. Below it the thread hop would cost more.
GUARD_THREAD_CHARS = 32_768


async def run_check(check: Callable[[Mapping[str, Any]], None], body: Mapping[str, Any]) -> None:
    """The leak guard on `body`, on the loop or, for a big body, in a worker thread."""
    messages = body.get("messages") or ()
    size = sum(len(m["content"]) for m in messages if isinstance(m, dict) and isinstance(m.get("content"), str))
    if size > GUARD_THREAD_CHARS:
        await asyncio.to_thread(check, body)
    else:
        check(body)
