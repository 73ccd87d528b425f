"""The document a base model continues (a GGUF without a chat template, such as
the default Gemma 3 270M): worked examples, then this turn in their exact format,
ending where the answer starts.

A base model this small imitates far better than it obeys, so it is given no
rules: the examples show the format, and a grammar (sidecar/llm/grammars.py)
holds the reply to it. The examples are fixed text per reply shape, so every
prompt of a shape starts with the same bytes and llama.cpp reuses their KV.

The turn is read from the chat the context engine built for every model: its
sections are our own headers (sidecar/prompts/fixed.py), so the lines kept here
are the scene's facts as already projected (aliases, never an engine ID). The
rules, mood texts and instructions written for instruction-following models
are left out, and so are the model's own earlier narrations: fed back beside
the events, a model this size copies them (issue 29: three events answered with
the first one's sentence). A character's own earlier lines stay, as the game
saw them, as what it said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sidecar.llm.types import ReplyShape

__all__ = ["Document", "Turn", "read_turn", "render_document", "EXAMPLES", "cue"]

#: Lines of the setting and scene sections a document keeps, by their label.
_KEEP = ("Location:", "Player:", "Present:", "Here:", "Conditions:", "Focus:", "You are ")
#: Earlier lines of the story a document keeps at most (the newest).
MAX_EARLIER = 6
_HANDLE = "Your handle in this game: "
_OPTION = re.compile(r"^(\d+)\. (.+)$")
#: The default personas' first line and the identity's handle line (sidecar/prompts/persona.py,
#: sidecar/context/layout.py).
_IDENTITY = re.compile(r"^## Identity\nYou are ([^.\n]{1,80})\.", re.MULTILINE)
_OWN_HANDLE = re.compile(r"^Your handle in this game: ([a-z]+_\d+)\.$", re.MULTILINE)
#: A handle shown with its name, as the handle alias mode labels entities: "npc_1 (Bram)".
_LABELLED = re.compile(r"\b([a-z]+_\d+) \(([^()\n]+)\)")


@dataclass(frozen=True)
class Turn:
    """What one run's chat says, as a document needs it."""

    facts: tuple[str, ...]
    earlier: tuple[str, ...]
    #: The line this turn answers ("Event: ...", 'Mira says: "..."'); "" for a decision.
    said: str
    #: Who answers ("" = the narrator).
    me: str
    options: tuple[str, ...] = ()
    #: The input's instruction, for a turn that answers no line (describe, continue).
    ask: str = ""
    #: A decision's "Situation: ..." line.
    situation: str = ""


def _sections(content: str) -> list[tuple[str, list[str]]]:
    """(header, lines) in order; the lines before the first header have header ""."""
    out: list[tuple[str, list[str]]] = [("", [])]
    for line in content.splitlines():
        if line.startswith("## "):
            out.append((line, []))
        elif line.strip():
            out[-1][1].append(line.strip())
    return out


def _fact(line: str) -> bool:
    return line.startswith(_KEEP) and not line.startswith("Location: (within)")


def read_turn(messages: list[dict[str, str]], shape: ReplyShape) -> Turn:
    """The parts of the chat a document shows."""
    facts: list[str] = []
    earlier: list[str] = []
    said, me, ask, situation = "", "", "", ""
    options: list[str] = []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    for i, message in enumerate(messages):
        role, content = message.get("role"), str(message.get("content", ""))
        if role == "assistant":
            if me and shape.kind == "line":  # what the character said, as the game heard it
                earlier.append(f'{me} says: "{" ".join(content.split())}"')
            continue
        for header, lines in _sections(content):
            if header == "## Identity":
                me = next((ln[len(_HANDLE) :].rstrip(".") for ln in lines if ln.startswith(_HANDLE)), me)
            elif header in ("## Setting", "## Scene"):
                facts.extend(ln for ln in lines if _fact(ln))
            elif header == "## Input" and i == last_user and lines:
                ask = lines[0]
            elif header == "## Decision":
                situation = next((ln for ln in lines if ln.startswith("Situation:")), situation)
                options.extend(m.group(2) for ln in lines if (m := _OPTION.match(ln)))
            elif header == "" and role == "user":
                if i == last_user:
                    said = lines[0] if lines else ""
                else:
                    earlier.extend(lines)
    return Turn(tuple(dict.fromkeys(facts)), tuple(earlier[-MAX_EARLIER:]), said, me, tuple(options), ask, situation)


#: Worked examples per reply shape, in exactly the layout `render_document` gives the turn.
EXAMPLES = {
    "prose": """\
Location: The Old Mill — A creaking mill above a fast river.
Player: Hana — A miller's daughter with flour on her sleeves.
Present: Dog — A stray dog with a torn ear.
Conditions: time_of_day: morning
Event: The dog knocks over a sack of flour.
Narration: Flour bursts across the floorboards in a pale cloud. Hana coughs and waves it away, laughing despite herself.

Location: Cargo Bay 3 — A cold, echoing hold full of crates.
Player: Ito — A station engineer in a patched suit.
Present: Drone — A damaged maintenance drone.
Conditions: alarm: red
Event: The drone sparks and drops to the deck.
Narration: The drone shudders, spits blue sparks and clatters onto the steel. Ito hears only the hiss of the vents.

Location: Ashgrove Road — A muddy road between dark pines.
Player: Brenna — A sellsword with a notched axe.
Present: Wolf — A grey wolf, thin with hunger.
Event: Brenna raises her axe and the wolf backs away.
Narration: Brenna lifts the notched axe high. The wolf bares its teeth, then slinks back into the pines.
""",
    "line": """\
Location: The Harbour Gate — A stone gate above the night harbour.
Player: Ada — A courier with a sealed letter.
You are Jonas
Ada says: "Can you open the gate?"
Jonas says: "Not before dawn, courier. Captain's orders."

Location: Blue Lantern Bar — A cramped bar under neon signs.
Player: Kei — A detective in a wet coat.
You are Mara
Kei says: "Did you see who came in last night?"
Mara says: "A tall man in grey, around midnight. He paid in cash and never took off his hat."
""",
    "decision": """\
Location: Pine Camp — A small camp under tall pines.
Player: Ola — A young hunter.
You are Tamsin
Situation: A wolf circles the campfire, growling.
Options: 1. Throw a burning branch at the wolf 2. Lie down to sleep 3. Sing a song
Tamsin decides: {"action": 1, "message": "Back, you mangy beast!", "notes": "Wolves fear fire."}

Location: The Market — A busy square full of stalls.
Player: Ruth — A traveller with a heavy purse.
You are Pell
Situation: Ruth asks to buy bread and holds out two coins.
Options: 1. Hide under the stall 2. Sell her a loaf of bread 3. Shout for the guards
Pell decides: {"action": 2, "message": "Fresh this morning. Two coins it is.", "notes": "Ruth pays fairly."}
"""
    # An option with parameters (sidecar/context/action_params.py), as the prompt lists them.
    + "\nLocation: The Smithy — A hot forge full of sparks.\n"
    "Player: Ada — A carpenter with a long list.\n"
    "Present: Tam — A boy who sweeps the floor.\n"
    "You are Goran\n"
    "Situation: Ada asks for three iron nails and puts a coin on the anvil.\n"
    'Options: 1. Send someone away — with parameters: who: one of "Ada", "Tam" '
    "2. Sell nails — with parameters: count: a whole number from 1 to 20 3. Take a nap\n"
    'Goran decides: {"action": 2, "parameters": {"count": 3}, "message": "Three nails, still warm from the forge.", '
    '"notes": "Ada needs nails for her roof."}\n',
}


def cue(shape: ReplyShape, me: str) -> str:
    """Where the answer starts (the grammar takes it from there)."""
    if shape.kind == "line":
        return f'{me or "I"} says: "'
    if shape.kind == "decision":
        return f"{me or 'I'} decides:"
    return "Narration:"


def _by_name(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The chat with each handle the chat labels ("npc_1 (Bram)") written as its name.

    The grammar never lets the model write a handle (no underscore), and a model this
    small copies what it reads: shown "npc_1 says", it answers as nobody. A name is
    what the handle alias mode shows the player for it anyway (the de-aliaser's table)."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    names = dict(_LABELLED.findall(text))
    me, own = _IDENTITY.search(text), _OWN_HANDLE.search(text)
    if me and own and "_" not in me.group(1):  # the actor: its persona names it, its handle is below
        names.setdefault(own.group(1), me.group(1))
    if not names:
        return messages
    handle = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b(?: \([^()\n]+\))?")
    return [{**m, "content": handle.sub(lambda h: names[h.group(1)], str(m.get("content", "")))} for m in messages]


@dataclass(frozen=True)
class Document:
    #: The whole prompt: the shape's examples, a blank line, this turn ending at its cue.
    text: str
    #: This turn's lines without the examples, the options and the cue (what a decision's
    #: options are scored after: listed there, every option would read as likely).
    scene: str
    turn: Turn


def render_document(messages: list[dict[str, str]], shape: ReplyShape) -> Document:
    """The document for `messages`, a reply of `shape`."""
    turn = read_turn(_by_name(messages), shape)
    lines = list(turn.facts)
    if shape.kind in ("line", "decision") and turn.me and f"You are {turn.me}" not in lines:
        lines.append(f"You are {turn.me}")
    lines.extend(turn.earlier)
    if turn.situation:  # last before the choice: what the choice is about
        lines.append(turn.situation)
    scene = "\n".join(lines)
    if shape.kind == "decision":
        lines.append("Options: " + " ".join(f"{n}. {label}" for n, label in enumerate(turn.options, 1)))
    elif turn.said:
        lines.append(turn.said)
    elif turn.ask:  # describe or continue: what is asked stands where an event would
        lines.append(f"Event: {turn.ask}")
    return Document(EXAMPLES[shape.kind] + "\n" + "\n".join(lines) + "\n" + cue(shape, turn.me), scene, turn)
