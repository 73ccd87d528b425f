"""Actions with parameters (docs/runs.md, "Actions with parameters"): an option's
small JSON Schema, read once where the request arrives; what the prompt says
about each parameter; the JSON Schema the embedded model's grammar is built
from; and the check of a reply's parameters, on every model.

Four kinds of parameter, each a JSON Schema property:
- `{"enum": [...]}`: one of these strings or integers (shown and matched as the
  projection shows game text, returned as the game wrote it);
- `{"type": "integer", "minimum": a, "maximum": b}`: a whole number in the range;
- `{"type": "string", "pattern": "^...$", "maxLength": n}`: text that matches;
- `{"type": "string", "entity": "<kind>"}`: an entity of that kind ("any": of any
  kind) that the actor perceives. The model names it by its alias, and the game
  gets its engine ID: one the actor cannot perceive is refused, with the reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from sidecar.context.contract import ParamSpec
from sidecar.errors import InvalidRequest
from sidecar.projection import AliasRejected, Projection
from sidecar.prompts.decisions import ReplyRejected
from sidecar.state.checker import KINDS

__all__ = ["candidates", "check_parameters", "describe", "model_schema", "parse_schema", "MAX_CANDIDATES"]

#: Entities offered for one entity parameter, at most (the prompt lists them all).
MAX_CANDIDATES = 24
_PROPERTY_KEYS = frozenset({"type", "enum", "minimum", "maximum", "pattern", "maxLength", "entity", "description"})
_INT64 = 2**63


def _fail(where: str, what: str) -> InvalidRequest:
    return InvalidRequest(f"{where}: {what} (docs/runs.md, Actions with parameters)")


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _property(name: str, prop: object, where: str, required: bool) -> ParamSpec:
    at = f"{where} property {name!r}"
    if not isinstance(prop, dict):
        raise _fail(at, "must be an object")
    unknown = sorted(set(prop) - _PROPERTY_KEYS)
    if unknown:
        raise _fail(at, f"has keys this subset does not take: {', '.join(unknown)}")
    description = prop.get("description", "")
    if not isinstance(description, str):
        raise _fail(at, '"description" must be a string')
    if "enum" in prop:
        values = prop["enum"]
        if not isinstance(values, list) or not values:
            raise _fail(at, '"enum" must be a list of at least one value')
        if not all(isinstance(v, str) or _integer(v) for v in values):
            raise _fail(at, '"enum" values must be strings or integers')
        texts = tuple(str(v) for v in values)
        if len(set(texts)) != len(texts) or any(not t.strip() for t in texts):
            raise _fail(at, '"enum" values must be unique and not empty')
        return ParamSpec(name, "enum", description, required, values=texts)
    kind = prop.get("type")
    if kind == "integer":
        low, high = prop.get("minimum"), prop.get("maximum")
        if not (_integer(low) and _integer(high)):
            raise _fail(at, 'an integer needs "minimum" and "maximum", both integers')
        assert isinstance(low, int) and isinstance(high, int)
        if not -_INT64 <= low <= high < _INT64:
            raise _fail(at, f'"minimum" ({low}) must not be above "maximum" ({high}), both 64-bit')
        return ParamSpec(name, "integer", description, required, minimum=low, maximum=high)
    if kind == "string" and "entity" in prop:
        of = prop["entity"]
        if of != "any" and of not in KINDS:
            raise _fail(at, f'"entity" must be "any" or one of {", ".join(sorted(KINDS))}; got {of!r}')
        return ParamSpec(name, "entity", description, required, entity_kind=str(of))
    if kind == "string":
        pattern, longest = prop.get("pattern", ""), prop.get("maxLength", 80)
        if not isinstance(pattern, str) or (pattern and not (pattern.startswith("^") and pattern.endswith("$"))):
            raise _fail(at, '"pattern" must be a regular expression anchored with ^ and $')
        try:
            re.compile(pattern)
        except re.error as exc:
            raise _fail(at, f'"pattern" is not a regular expression: {exc}') from None
        if not _integer(longest) or not 1 <= longest <= 1000:
            raise _fail(at, '"maxLength" must be an integer from 1 to 1000')
        return ParamSpec(name, "string", description, required, pattern=pattern, max_length=int(longest))
    raise _fail(at, 'must have "enum", or "type" "integer" or "string"')


def parse_schema(text: str, where: str) -> tuple[ParamSpec, ...]:
    """An option's `parameters_schema`; raises InvalidRequest saying what is wrong."""
    if not text.strip():
        return ()
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(where, f"is not JSON: {exc}") from None
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise _fail(where, 'must be a JSON object schema ({"type": "object", "properties": {...}})')
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        raise _fail(where, '"properties" must name at least one parameter')
    required = schema.get("required", list(props))
    if not isinstance(required, list) or any(r not in props for r in required):
        raise _fail(where, '"required" must list names from "properties"')
    for name in props:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,39}", name):
            raise _fail(where, f"parameter name {name!r} must be a letter then letters, digits or _ (at most 40)")
    return tuple(_property(name, prop, where, name in required) for name, prop in props.items())


def candidates(proj: Projection, spec: ParamSpec) -> list[str]:
    """The aliases an entity parameter may take: what the actor perceives, of its kind,
    in the projection's stable order, at most MAX_CANDIDATES."""
    out = []
    for entity in proj.visible_entities():
        if spec.entity_kind in ("any", entity.kind) and entity.id != proj.actor_id:
            out.append(proj.alias(entity.id))
            if len(out) == MAX_CANDIDATES:
                break
    return out


def _shown_values(proj: Projection, spec: ParamSpec) -> list[str]:
    return [proj.text(v) for v in spec.values]


def describe(proj: Projection, spec: ParamSpec, option: str = "an option") -> str:
    """One parameter as the prompt lists it: `amount: a whole number from 1 to 50`.
    Raises InvalidRequest when a pattern holds the text of one of the session's engine IDs:
    the prompt shows a pattern as written (a regular expression is no text to project), and
    the leak guard would refuse the request (docs/privacy.md)."""
    if spec.pattern and proj.holds_engine_id(spec.pattern):
        raise _fail(
            f"{option}.parameters_schema property {spec.name!r}",
            '"pattern" holds the text of an engine ID of this session; the model reads a pattern as written '
            'and never reads an engine ID: match that value with an "enum" or an "entity" parameter instead',
        )
    if spec.kind == "enum":
        what = "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in _shown_values(proj, spec))
    elif spec.kind == "integer":
        what = f"a whole number from {spec.minimum} to {spec.maximum}"
    elif spec.kind == "entity":
        names = candidates(proj, spec)
        what = "one of " + ", ".join(json.dumps(n, ensure_ascii=False) for n in names) if names else "nobody here"
    else:
        what = f"text matching {spec.pattern}" if spec.pattern else f"text of at most {spec.max_length} characters"
    note = f" ({proj.text(spec.description)})" if spec.description.strip() else ""
    optional = ", optional" if not spec.required else ""
    return f"{spec.name}{note}{optional}: {what}"


def model_schema(proj: Projection, specs: tuple[ParamSpec, ...]) -> dict[str, object]:
    """The JSON Schema of the reply's "parameters" as the model writes them (entity
    parameters as an enum of aliases, enums as the prompt shows them): what the
    embedded model's grammar is built from."""
    props: dict[str, object] = {}
    for spec in specs:
        if spec.kind == "enum":
            props[spec.name] = {"enum": _shown_values(proj, spec)}
        elif spec.kind == "entity":
            props[spec.name] = {"enum": candidates(proj, spec) or [""]}
        elif spec.kind == "integer":
            props[spec.name] = {"type": "integer", "minimum": spec.minimum, "maximum": spec.maximum}
        else:
            props[spec.name] = {"type": "string", "maxLength": spec.max_length, **(
                {"pattern": spec.pattern} if spec.pattern else {})}  # fmt: skip
    required = [s.name for s in specs if s.required]
    return {"type": "object", "properties": props, "required": required}


def _check_one(proj: Projection, spec: ParamSpec, value: object) -> str:
    """The game's value for one parameter the model wrote; raises ReplyRejected."""
    said = json.dumps(value, ensure_ascii=False)
    said = said if len(said) <= 40 else "that value"
    if spec.kind == "integer":
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and re.fullmatch(r"-?\d{1,19}", value.strip()):
            number = int(value)
        if number is None or not spec.minimum <= number <= spec.maximum:
            raise ReplyRejected(f'parameter "{spec.name}" must be a whole number from {spec.minimum} '
                                f"to {spec.maximum}; got {said}")  # fmt: skip
        return str(number)
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise ReplyRejected(f'parameter "{spec.name}" must be text; got {said}')
    text = str(value).strip()
    if spec.kind == "enum":
        shown = _shown_values(proj, spec)
        if text not in shown:
            choices = ", ".join(json.dumps(v, ensure_ascii=False) for v in shown)
            raise ReplyRejected(f'parameter "{spec.name}" must be one of {choices}; got {said}')
        return spec.values[shown.index(text)]
    if spec.kind == "entity":
        try:
            engine_id = proj.resolve(text)
        except AliasRejected as exc:
            raise ReplyRejected(f'parameter "{spec.name}": {exc.reason}; name one you perceive') from None
        kind = proj.session.world.entities[engine_id].kind
        if spec.entity_kind not in ("any", kind):
            raise ReplyRejected(f'parameter "{spec.name}" must name a {spec.entity_kind}; {said} is a {kind}')
        return engine_id
    if len(text) > spec.max_length or (spec.pattern and not re.search(spec.pattern, text)):
        rule = f"match {spec.pattern}" if spec.pattern else f"be at most {spec.max_length} characters"
        raise ReplyRejected(f'parameter "{spec.name}" must {rule}; got {said}')
    return text


def check_parameters(proj: Projection, specs: tuple[ParamSpec, ...], given: object) -> tuple[tuple[str, str], ...]:
    """The chosen option's parameters for the game (engine IDs for entities), from the
    reply's "parameters" object; raises ReplyRejected with a reason the model can act on."""
    if not specs:
        return ()
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise ReplyRejected('"parameters" must be an object of the option\'s parameters')
    out: list[tuple[str, str]] = []
    for spec in specs:
        if spec.name not in given:
            if spec.required:
                raise ReplyRejected(f'this option needs "parameters": {{"{spec.name}": ...}} ({describe(proj, spec)})')
            continue
        out.append((spec.name, _check_one(proj, spec, given[spec.name])))
    return tuple(out)
