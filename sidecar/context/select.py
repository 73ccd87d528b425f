"""Select: the layered context (docs/context.md, Pipeline) for one actor and input, already
projected (aliases, perspective, no coordinates): scene lines in priority order and
recent events (the lore cards and memories an input recalls: recall.py).

Everything here goes through the Projection; nothing reads an engine ID into
text. Cost is O(what the actor perceives), never O(session size).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sidecar.context.context_index import STOPWORDS, ContextIndex, words
from sidecar.projection import Projection
from sidecar.prompts.escape import one_line
from sidecar.state.model import Entity, Event, Session

__all__ = ["SceneLines", "Shown", "game_text", "own_lines", "scene_lines", "event_line", "short"]

#: Characters present / items listed in the scene before the list stops.
MAX_PRESENT = 24
MAX_ITEMS = 24
MAX_RELATIONS = 12

_HEADER_LINE = re.compile(r"(?m)^(\s*)#")


def game_text(proj: Projection, text: str) -> str:
    """Game-authored long text: engine IDs scrubbed, and a line that starts with
    '#' indented so it can never read as one of the prompt's own headers."""
    return own_lines(proj.text(text))


def own_lines(text: str) -> str:
    """Text projected already (a rendered persona): only a line that starts with '#'
    indented, as `game_text` does."""
    out = text.strip()
    return _HEADER_LINE.sub(r"\1 #", out) if "#" in out else out


def short(text: str, limit: int = 160) -> str:
    text = one_line(text)
    if len(text) <= limit:
        return text
    cut = text[:limit]
    dot = cut.rfind(". ")
    return cut[: dot + 1] if dot > limit // 2 else cut.rstrip() + "…"


@dataclass
class Shown:
    """Aliases the prompt shows, so mentions in a reply can be mapped back without guessing."""

    aliases: set[str] = field(default_factory=set)

    def label(self, proj: Projection, entity: Entity) -> str:
        alias = proj.alias(entity.id)
        self.aliases.add(alias)
        name = one_line(proj.text(entity.name))
        return f"{alias} ({name})" if name and name != alias else alias

    def ref(self, proj: Projection, engine_id: str) -> str:
        text = proj.ref_text(engine_id)
        if engine_id in proj.session.world.entities and text == proj.session.aliases.by_id.get(engine_id):
            self.aliases.add(text)
        return text


def _fields_text(proj: Projection, entity: Entity) -> str:
    fields = proj.fields(entity)
    return "; ".join(f"{one_line(k)}: {one_line(v)}" for k, v in fields.items())


def _state(proj: Projection, entity: Entity) -> str:
    """Fields and tags: what changes about an entity."""
    extra = _fields_text(proj, entity)
    if entity.tags:
        extra = "; ".join(x for x in (extra, "tags: " + ", ".join(one_line(proj.text(t)) for t in entity.tags)) if x)
    return f" [{extra}]" if extra else ""


def _detail(proj: Projection, shown: Shown, entity: Entity) -> str:
    desc = game_text(proj, entity.description)
    return shown.label(proj, entity) + (f" — {one_line(desc)}" if desc else "") + _state(proj, entity)


def _brief(proj: Projection, shown: Shown, entity: Entity) -> str:
    desc = short(game_text(proj, entity.description))
    return shown.label(proj, entity) + (f" — {desc}" if desc else "")


@dataclass
class SceneLines:
    """The scene of one prompt: the slow layer (setting), the fast layer (scene),
    and what the setting left out (kind, count, why) for PreviewPrompt."""

    setting: list[str]
    scene: list[str]
    left_out: list[tuple[str, int, str]] = field(default_factory=list)
    #: Each line of `setting` and of `scene` in its short form (the label without the
    #: description): what the budget keeps before it drops a line (budget.fit).
    setting_short: list[str] = field(default_factory=list)
    scene_short: list[str] = field(default_factory=list)
    #: The characters present were more than MAX_PRESENT and ranked by this input.
    ranked_by_input: bool = False


def _rank_present(
    proj: Projection, cidx: ContextIndex, actor: Entity | None, present: list[Entity], query: str
) -> list[Entity]:
    """The MAX_PRESENT characters most relevant to the input, in their world order.

    Relevance: input words in the name (x2) or description, and a relation with the
    actor. World order for those kept, so the setting reads the same while the same
    characters are in it (it sits in the cached prefix)."""
    asked = set(words(query)) - STOPWORDS
    related: set[str] = set()
    if actor is not None:
        for rel in cidx.relations_by_entity.get(actor.id, ()):
            related.update((rel.source_id, rel.target_id))
    scores: list[tuple[float, int]] = []
    for i, ent in enumerate(present):
        name = set(words(proj.text(ent.name)))
        desc = set(words(proj.text(ent.description))) - name
        score = 2 * len(asked & name) + len(asked & desc) + (ent.id in related)
        scores.append((-score, i))
    keep = sorted(i for _, i in sorted(scores)[:MAX_PRESENT])
    return [present[i] for i in keep]


def scene_lines(
    session: Session,
    proj: Projection,
    cidx: ContextIndex,
    shown: Shown,
    actor: Entity | None,
    focus_ids: list[str],
    moment_text: str,
    query: str = "",
    place: str = "",
) -> SceneLines:
    """(setting, scene), each most important first (trimming cuts from the end).

    The setting is the slow layer: where the actor is, who and what is there,
    what it carries, its relations; it changes when the world does, not per
    turn, and never with the focus (it sits in the cached prefix: docs/context.md).
    The scene is the fast layer: conditions (time, weather), focus entities, the
    actor's and the player's current fields (HP...).
    """
    b = _Scene(session.world.entities, proj, cidx, shown, actor)
    here = b.where(focus_ids, place)
    if here is not None and proj.can_see(here):
        b.location(here)
    facts = [f"{one_line(k)}: {one_line(v)}" for k, v in proj.scene_facts()]
    if moment_text:
        facts.insert(0, f"moment: {one_line(moment_text)}")
    if facts:
        b.scene("Conditions: " + "; ".join(facts))
    players = [b.ents[p] for p in cidx.player_ids if p in b.ents and proj.can_see(b.ents[p])]
    # The setting first, independent of the focus.
    b.players_setting(players)
    if here is not None:
        b.present_here(here, query)
    if actor is not None:
        b.actor_setting(actor)
    # The scene: what the focus brings, and current fields.
    done = b.focus(focus_ids)
    b.current_fields(players, done)
    return b.out


@dataclass
class _Scene:
    """What `scene_lines` builds, one layer per method, in the order the lines go."""

    ents: dict[str, Entity]
    proj: Projection
    cidx: ContextIndex
    shown: Shown
    actor: Entity | None
    out: SceneLines = field(default_factory=lambda: SceneLines([], []))
    #: Entities the setting describes (their description need not repeat in the scene).
    described: set[str] = field(default_factory=set)

    def setting(self, line: str, short: str = "") -> None:
        self.out.setting.append(line)
        self.out.setting_short.append(short or line)

    def scene(self, line: str, short: str = "") -> None:
        self.out.scene.append(line)
        self.out.scene_short.append(short or line)

    def is_actor(self, eid: str) -> bool:
        return self.actor is not None and eid == self.actor.id

    def where(self, focus_ids: list[str], place: str = "") -> Entity | None:
        ents, actor = self.ents, self.actor
        here = ents.get(actor.location_id) if actor is not None and actor.location_id else None
        if here is not None:
            return here
        # No acting actor (the narrator): the scene is where the narrated event happens,
        # else where the player is, else where the focus is. Not the first entity named:
        # a narration that names someone elsewhere keeps the scene (and its cached prefix).
        if place and place in ents:
            return ents[place]
        for eid in (*self.cidx.player_ids, *focus_ids):
            anchor = ents.get(eid)
            if anchor is not None and anchor.location_id and anchor.location_id in ents:
                return ents[anchor.location_id]
        return None

    def location(self, here: Entity) -> None:
        proj, shown = self.proj, self.shown
        self.described.add(here.id)
        line = "Location: " + _detail(proj, shown, here)
        label = "Location: " + shown.label(proj, here)
        parent = self.ents.get(here.location_id) if here.location_id else None
        if parent is not None and proj.can_see(parent):
            within = f" (within {shown.label(proj, parent)})"
            line, label = line + within, label + within
        self.setting(line, label)

    def players_setting(self, players: list[Entity]) -> None:
        for player in players:
            if self.is_actor(player.id):
                continue
            self.described.add(player.id)
            desc = short(game_text(self.proj, player.description))
            if desc:
                label = self.shown.label(self.proj, player)
                self.setting(f"Player: {label} — {desc}", f"Player: {label}")
            self.carried(player)

    def carried(self, player: Entity) -> None:
        """What a player carries, where the actor perceives it (seed 000: the player's state
        and what they carry are part of the scene)."""
        proj, ents = self.proj, self.ents
        things = [ents[e] for e in self.cidx.base.by_location.get(player.id, ()) if e in ents]
        seen = [e for e in things if proj.can_see(e)][:MAX_ITEMS]
        if seen:
            self.described.update(e.id for e in seen)
            who = self.shown.ref(self.proj, player.id)
            self.setting(f"{who} carries: " + ", ".join(self.shown.label(proj, e) for e in seen))

    def present_here(self, here: Entity, query: str) -> None:
        proj, shown, out = self.proj, self.shown, self.out
        present: list[Entity] = []
        items: list[Entity] = []
        extra_items = 0
        for eid in self.cidx.base.by_location.get(here.id, ()):
            ent = self.ents.get(eid)
            if eid in self.described or self.is_actor(eid) or ent is None or not proj.can_see(ent):
                continue
            if ent.kind in ("character", "player"):
                present.append(ent)
            elif ent.kind != "location":
                if len(items) < MAX_ITEMS:
                    items.append(ent)
                else:
                    extra_items += 1
        if len(present) > MAX_PRESENT:
            why = f"more than {MAX_PRESENT} present: kept the most relevant to the input"
            out.left_out.append(("character", len(present) - MAX_PRESENT, why))
            present = _rank_present(proj, self.cidx, self.actor, present, query)
            out.ranked_by_input = True
        if extra_items:
            out.left_out.append(("item", extra_items, f"more than {MAX_ITEMS} things here"))
        self.described.update(e.id for e in present)
        for e in present:
            self.setting("Present: " + _brief(proj, shown, e), "Present: " + shown.label(proj, e))
        if items:
            self.described.update(e.id for e in items)
            self.setting("Here: " + ", ".join(shown.label(proj, e) for e in items))

    def actor_setting(self, actor: Entity) -> None:
        proj, shown, ents = self.proj, self.shown, self.ents
        carried = [ents[e] for e in self.cidx.base.by_location.get(actor.id, ()) if e in ents and proj.can_see(ents[e])]
        if carried:
            self.setting("You carry: " + ", ".join(shown.label(proj, e) for e in carried[:MAX_ITEMS]))
        rels = [r for r in self.cidx.relations_by_entity.get(actor.id, ()) if proj.can_see_relation(r)]
        for rel in rels[:MAX_RELATIONS]:
            src, dst = shown.ref(proj, rel.source_id), shown.ref(proj, rel.target_id)
            self.setting(f"Relation: {src} {one_line(proj.text(rel.kind))} {dst} ({rel.strength:+.1f})")

    def focus(self, focus_ids: list[str]) -> set[str]:
        done: set[str] = set()
        for fid in focus_ids:
            ent = self.ents.get(fid)
            if ent is None or fid in done or not self.proj.can_see(ent) or self.is_actor(fid):
                continue
            done.add(fid)
            label = "Focus: " + self.shown.label(self.proj, ent)
            if fid in self.described:
                # Described in the setting already: only what changes (fields, tags).
                self.scene(label + _state(self.proj, ent), label)
            else:
                self.scene("Focus: " + _detail(self.proj, self.shown, ent), label)
        return done

    def current_fields(self, players: list[Entity], done: set[str]) -> None:
        # The volatile block names by alias whom the stable part already labels (the identity
        # gives the actor's handle, the setting the player's name): sent every turn, uncached.
        proj, shown, scene = self.proj, self.shown, self.scene
        if self.actor is not None:
            own = _fields_text(proj, self.actor)
            scene(f"You are {shown.ref(proj, self.actor.id)}" + (f" [{own}]" if own else ""))
        for player in players:
            if player.id in done or self.is_actor(player.id):
                continue
            own = _fields_text(proj, player)
            who = shown.ref(proj, player.id) if player.id in self.described else shown.label(proj, player)
            scene(f"Player: {who}" + (f" [{own}]" if own else ""))


def event_line(proj: Projection, ev: Event) -> str:
    """One world event as projected text, with its moment when the actor may know it."""
    text = one_line(proj.text(ev.text))
    when = proj.moment_text(ev.moment)
    return f"{text} ({one_line(when)})" if when else text
