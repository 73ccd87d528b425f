"""The leak guard: the last check before a request leaves for a model.

The projection keeps engine IDs out of prompts by construction; this is the
defence in depth behind it. `check_outgoing` searches every message for the
session's engine IDs (and the suppressed parts of the game moment) and raises
PrivacyLeakBlocked when it finds one, so the request is never sent. Finding one
is a bug: it is logged with the message index and the role, never the ID.

What counts as an occurrence is the rule of `sidecar.projection.idmatch`
(whole tokens; short or word-like IDs are not searched). The matcher is built
once per ID set and cached (`Projection.engine_ids` is the very set the
projection's own matcher was built for, so a check costs one pass per message).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from sidecar.errors import PrivacyLeakBlocked
from sidecar.projection.idmatch import IdMatcher, matcher_for, searchable
from sidecar.state.model import Moment

__all__ = ["check_outgoing"]

log = logging.getLogger(__name__)


def check_outgoing(
    messages: list[dict[str, str]],
    engine_ids: Iterable[str],
    *,
    moment: Moment | None = None,
) -> None:
    """Raise PrivacyLeakBlocked when any message holds an engine ID (in any key
    but "role"; non-string values are checked as their JSON).

    `moment`: the parts of the game moment that must not reach the model (pass
    `Projection.guard_moment(spec.moment)`, which blanks the exposed parts); its
    timeline, calendar and tick are searched like IDs (tick 0 and empty strings
    are not).
    """
    ids = engine_ids if isinstance(engine_ids, frozenset) else frozenset(engine_ids)
    matcher = matcher_for(ids)
    extra = _moment_matcher(moment)
    for index, message in enumerate(messages):
        for key, value in message.items():
            if key == "role" or not value:
                continue
            # Every other part of the message is checked, whatever its shape (content
            # parts, tool calls...): a request is refused on what it holds, not on
            # where the guard expected to find it.
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            what = None
            if matcher.first(text) is not None:
                what = "engine_id"
            elif extra is not None and extra.first(text) is not None:
                what = "moment"
            if what is not None:
                log.error(
                    "privacy leak blocked: outgoing model request contains an %s",
                    what,
                    extra={
                        "fields": {"message_index": index, "role": message.get("role", ""), "key": key, "kind": what}
                    },
                )
                raise PrivacyLeakBlocked(
                    f"the request to the model was not sent: message {index} contained an {what} "
                    "(a projection bug; logged)",
                    metadata={"message_index": str(index), "kind": what},
                )


def _moment_matcher(moment: Moment | None) -> IdMatcher | None:
    if moment is None:
        return None
    values = [moment.timeline, moment.calendar]
    if moment.tick:
        values.append(str(moment.tick))
    values = [v for v in values if v and searchable(v)]
    return IdMatcher(values) if values else None
