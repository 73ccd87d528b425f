"""Which transport serves a profile, worked out once per profile.

litellm resolves a model string on every call (provider, model name, base URL,
parameters); the sidecar only needs that answer once, and for most profiles it
needs no litellm at all:

- `local/...`: the embedded model, called directly (sidecar/llm/local.py);
- `scripted/...`: the fake model, called directly (sidecar/llm/scripted.py);
- transport "sse": an OpenAI-compatible server, read by sidecar/llm/sse.py;
- transport "litellm": litellm's own call (sidecar/llm/via_litellm.py), the only
  route that imports litellm.

Transport "auto" (the default) takes "sse" where it is safe: an OpenAI-compatible
provider at an `api_base` the user names. OpenAI's own API stays on litellm,
which adapts parameters per model (reasoning models take no temperature).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from sidecar.config import ModelProfile

__all__ = ["Route", "resolve", "called_url", "OPENAI_COMPATIBLE", "LOCAL", "SCRIPTED"]

LOCAL = "local"
SCRIPTED = "scripted"
#: litellm provider prefixes that speak OpenAI's chat completions wire format.
OPENAI_COMPATIBLE = frozenset({"openai", "hosted_vllm", "openai_like", "custom_openai", "lm_studio", "llamafile"})
_DEFAULT_BASE = {"openai": "https://api.openai.com/v1"}

RouteKind = Literal["local", "scripted", "sse", "litellm"]


class Route(msgspec.Struct, frozen=True):
    kind: RouteKind
    #: The model name as the serving side knows it: the full string for litellm,
    #: without the provider prefix for sse, the part after "local/" or "scripted/".
    model: str
    #: sse: the chat completions URL.
    url: str = ""
    #: Why the profile cannot be called ("" = it can); raised as PROVIDER_BAD_REQUEST.
    problem: str = ""
    #: Mark the end of the prompt's stable prefix for the provider's cache (litellm only).
    mark_cache: bool = False

    @property
    def needs_litellm(self) -> bool:
        return self.kind == "litellm"


def _split(model: str) -> tuple[str, str]:
    provider, sep, name = model.partition("/")
    return (provider, name) if sep else ("", model)


#: litellm providers that serve Claude with Anthropic's opt-in prompt cache.
_CLAUDE_HOSTS = frozenset({"anthropic", "bedrock", "vertex_ai"})


def _marks_cache(profile: ModelProfile, provider: str, name: str) -> bool:
    """Whether requests mark their stable prefix (`cache_control`): providers that
    cache only when asked. OpenAI-style providers cache on their own."""
    if profile.prompt_cache != "auto":
        return profile.prompt_cache == "mark"
    return provider == "anthropic" or (provider in _CLAUDE_HOSTS and "claude" in name.lower())


def resolve(profile: ModelProfile) -> Route:
    """The route of `profile` (never raises: an unusable profile carries its problem)."""
    provider, name = _split(profile.model)
    if provider == LOCAL:
        return Route("local", name)
    if provider == SCRIPTED:
        return Route("scripted", name)
    transport = profile.transport
    compatible = provider in OPENAI_COMPATIBLE or not provider  # no prefix: OpenAI's format
    if transport == "auto":
        transport = "sse" if compatible and profile.api_base else "litellm"
    if transport == "litellm":
        return Route("litellm", profile.model, mark_cache=_marks_cache(profile, provider, name))
    if not compatible:
        problem = f'transport "sse" needs an OpenAI-compatible provider; {profile.model!r} is {provider!r}'
        return Route("sse", name, problem=problem)
    base = profile.api_base or _DEFAULT_BASE.get(provider or "openai", "")
    if not base:
        return Route("sse", name, problem=f"profile for {profile.model!r} needs api_base for the sse transport")
    return Route("sse", name, url=_chat_url(base))


def called_url(profile: ModelProfile, route: Route) -> str:
    """The chat completions URL a call on `route` goes to, where the sidecar knows it:
    sse's own, or litellm's for an OpenAI-compatible provider at a named api_base
    ("" = a provider's own endpoint, which its errors name themselves)."""
    if route.url or route.kind != "litellm" or not profile.api_base:
        return route.url
    provider, _ = _split(profile.model)
    return _chat_url(profile.api_base) if provider in OPENAI_COMPATIBLE or not provider else ""


def _chat_url(base: str) -> str:
    return base.rstrip("/") + "/chat/completions"
