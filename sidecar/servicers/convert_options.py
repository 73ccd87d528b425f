"""SessionOptions, proto <-> domain (OpenSession's request and reply)."""

from __future__ import annotations

from sidecar.errors import InvalidRequest
from sidecar.servicers.convert_enums import ALIAS_FROM, ALIAS_TO
from sidecar.state import model as m
from sidecar.v1 import session_service_pb2 as spb

__all__ = ["options_from_pb", "options_to_pb"]


def options_from_pb(p: spb.SessionOptions) -> m.SessionOptions:
    if p.alias_mode not in ALIAS_FROM:
        raise InvalidRequest(f"options.alias_mode {p.alias_mode} is not an AliasMode value")
    if p.budget_tokens < 0:
        raise InvalidRequest("options.budget_tokens must be 0 (from the model) or positive")
    e = p.expose_moment
    return m.SessionOptions(
        alias_mode=ALIAS_FROM[p.alias_mode],
        expose_moment=m.MomentExposure(e.timeline, e.tick, e.calendar),
        coordinate_fields=list(p.coordinate_fields),
        exposed_coordinate_fields=list(p.exposed_coordinate_fields),
        budget_tokens=p.budget_tokens,
        profile=p.profile,
        memory_bank=p.memory_bank if p.HasField("memory_bank") else True,
    )


def options_to_pb(o_: m.SessionOptions) -> spb.SessionOptions:
    e = o_.expose_moment
    return spb.SessionOptions(
        alias_mode=ALIAS_TO.get(o_.alias_mode, ALIAS_TO["kind"]),
        expose_moment=spb.MomentExposure(timeline=e.timeline, tick=e.tick, calendar=e.calendar),
        coordinate_fields=o_.coordinate_fields,
        exposed_coordinate_fields=o_.exposed_coordinate_fields,
        budget_tokens=o_.budget_tokens,
        profile=o_.profile,
        memory_bank=o_.memory_bank,
    )
