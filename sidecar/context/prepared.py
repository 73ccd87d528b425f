"""A prepared run: the prompt, plus judging the reply (decisions: docs/context.md, Decisions and notes)
and recording it (transcripts, notes).

`evaluate` maps the chosen option and the aliases the reply mentions back to
engine IDs; a reply with no usable choice is Rejected with a reason (the run
then asks `sidecar.context.retry` for the next attempt's messages: a prepared
run holds no reference back to the engine that built it). `record` appends to
the actor's transcript and, for an accepted decision only, replaces the notes
when the reply carried them.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable

from sidecar.context.action_params import check_parameters, model_schema
from sidecar.context.context_index import context_index
from sidecar.context.contract import (
    Accepted,
    Chosen,
    ContinueInput,
    DecisionInput,
    DescribeInput,
    DialogueInput,
    NarrateInput,
    Prompt,
    Rejected,
    RunSpec,
)
from sidecar.context.history import new_entry
from sidecar.idsearch import Mask
from sidecar.projection import AliasRejected, Projection
from sidecar.projection.dealias import AliasTable, Dealiaser
from sidecar.projection.session_index import index_for
from sidecar.prompts.decisions import ReplyRejected, parse_decision
from sidecar.prompts.fixed import FIXED_MASK
from sidecar.state.model import Moment, Role, Session

__all__ = ["Prepared"]


class Prepared:
    """Implements sidecar.context.contract.PreparedRun."""

    def __init__(
        self,
        session: Session,
        spec: RunSpec,
        proj: Projection,
        prompt: Prompt,
        shown: frozenset[str],
        count: Callable[[str], int],
        budget: int,
        framing: str = "",
    ) -> None:
        self._session = session
        self._spec = spec
        self._proj = proj
        self._shown = shown
        self._count = count
        self._budget = budget
        self._framing = framing
        self.prompt = prompt
        self.engine_ids: frozenset[str] = proj.engine_ids
        #: The session's issued aliases: the guard does not count an engine ID's text inside one.
        self.aliases: Mask = proj.alias_mask
        #: The suppressed parts of the game moment: the leak guard refuses a request holding one.
        self.guard_moment: Moment | None = proj.guard_moment(spec.moment)
        self._accepted: dict[str, Accepted] = {}
        #: The revision the prompt saw: orders the recorded entries among world events.
        self._revision = session.revision
        self._names: AliasTable | None = None

    # What sidecar.context.retry rebuilds a smaller prompt from.
    @property
    def session(self) -> Session:
        return self._session

    @property
    def spec(self) -> RunSpec:
        return self._spec

    @property
    def count_tokens(self) -> Callable[[str], int]:
        return self._count

    @property
    def budget_tokens(self) -> int:
        return self._budget

    @property
    def framing(self) -> str:
        return self._framing

    def evaluate(self, reply: str, attempt: int) -> Accepted | Rejected:
        inp = self._spec.input
        if not isinstance(inp, DecisionInput):
            return Accepted()
        try:
            parsed = parse_decision(reply, len(inp.options))
        except ReplyRejected as rej:
            # Both go back to the model (and the reason to the game): projected like any
            # model-bound text, so an engine ID the model wrote becomes its alias and the
            # retry is not a request the leak guard must refuse.
            # The reason is our words around a quoted value: only the value is game text.
            return Rejected(self._proj.text(rej.reason, keep=FIXED_MASK), self._proj.text(reply))
        option = inp.options[parsed.index]
        try:
            parameters = check_parameters(self._proj, option.parameters, parsed.parameters)
        except ReplyRejected as rej:  # e.g. an entity the actor cannot perceive: said, and retried
            return Rejected(self._proj.text(rej.reason, keep=FIXED_MASK), self._proj.text(reply))
        chosen = Chosen(
            action_id=option.action_id,
            index=parsed.index,
            message=parsed.message,
            mentioned_ids=self._mentions(parsed.message),
            parameters=parameters,
        )
        accepted = Accepted(action=chosen, notes=parsed.notes)
        self._accepted[reply] = accepted
        return accepted

    def parameter_schemas(self) -> tuple[str, ...]:
        """Per option of a decision, the JSON Schema of its "parameters" as the model
        writes them ("" = none): what the embedded model's grammar holds it to."""
        inp = self._spec.input
        if not isinstance(inp, DecisionInput) or not any(o.parameters for o in inp.options):
            return ()
        return tuple(json.dumps(model_schema(self._proj, o.parameters)) if o.parameters else "" for o in inp.options)

    def model_text(self, text: str) -> str:
        return self._proj.text(text)

    def stop_sequences(self, stops: tuple[str, ...]) -> tuple[str, ...]:
        proj = self._proj
        out: list[str] = []
        aliases = self._session.aliases.by_id
        for stop in stops:
            text, read = proj.noting(functools.partial(proj.text, stop))
            # A reference the actor cannot perceive reads as a generic word: as a stop
            # sequence, "someone" would end the reply at the first "someone" it holds.
            if all(shown == aliases.get(eid) for eid, shown in read):
                out.append(text)
        return tuple(out)

    def prepare_names(self) -> AliasTable:
        """The alias table every dealiaser of this prompt shares. The context engine
        builds it with the prompt (in the run's worker thread); later calls reuse it."""
        if self._names is None:
            proj = self._proj
            # Kind aliases are recognised by their shape; display-name aliases are listed.
            self._names = AliasTable(proj.alias(e.id) for e in proj.visible_entities())
        return self._names

    def dealiaser(self) -> Dealiaser:
        return Dealiaser(self._proj.display, table=self.prepare_names())

    def _mentions(self, text: str) -> tuple[str, ...]:
        """Engine IDs of the aliases the reply names: only aliases this prompt showed,
        resolved through the projection (an alias never issued is not guessed)."""
        if not text or not self._shown:
            return ()
        out: list[str] = []
        for alias in sorted(self._shown, key=len, reverse=True):
            if re.search(r"(?<!\w)" + re.escape(alias) + r"(?!\w)", text):
                try:
                    eid = self._proj.resolve(alias)
                except AliasRejected:
                    continue
                if eid not in out:
                    out.append(eid)
        return tuple(out)

    def record(self, reply: str, *, interrupted: bool, run_id: str) -> None:
        spec, session = self._spec, self._session
        inp = spec.input
        log = session.transcripts.setdefault(spec.actor_id, [])
        entry = functools.partial(new_entry, run_id=run_id, revision=self._revision)
        reply_role: Role = "actor" if spec.actor_id else "narrator"
        if isinstance(inp, DialogueInput):
            speaker = inp.speaker_id or self._player_id()
            log.append(entry("player", inp.text, speaker))
        elif isinstance(inp, NarrateInput):
            log.append(entry("event", inp.text, ""))
        elif isinstance(inp, DecisionInput):
            labels = "; ".join(f"{i}. {o.label}" for i, o in enumerate(inp.options, 1))
            log.append(entry("event", f"{inp.situation} (options: {labels})".strip(), ""))
        elif isinstance(inp, DescribeInput):
            text = f"Describe {self._proj.ref_text(inp.entity_id)}" + (f" ({inp.aspect})" if inp.aspect else "")
            log.append(entry("event", text, "", shown=self.dealiaser().whole(text)))
        elif isinstance(inp, ContinueInput):
            log.append(entry("continue", "", ""))
        # What the game was streamed (display names and mentions): ReadTranscript returns it.
        shown = self.dealiaser().whole(reply)
        log.append(entry(reply_role, reply, spec.actor_id, interrupted=interrupted, shown=shown))
        if interrupted or not isinstance(inp, DecisionInput):
            return
        accepted = self._accepted.get(reply)
        if accepted is None:
            result = self.evaluate(reply, 0)
            accepted = result if isinstance(result, Accepted) else None
        if accepted is not None and accepted.notes is not None:
            session.notes[spec.actor_id] = accepted.notes

    def _player_id(self) -> str:
        players = context_index(self._session, index_for(self._session)).player_ids
        return players[0] if players else ""
