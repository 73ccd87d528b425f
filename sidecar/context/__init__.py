"""The context engine (docs/context.md): select -> project -> budget -> render.

`ContextEngine(config).prepare(session, spec, count_tokens=..., budget_tokens=...)`
returns a PreparedRun (see `sidecar.context.contract`, the contract with runs).
`sidecar.context.transcripts` pages through transcripts for ReadTranscript.
"""

from sidecar.context.context_engine import ContextEngine, resolve_budget
from sidecar.context.contract import PreparedRun, Prompt, PromptSection, RunSpec
from sidecar.context.prepared import Prepared

__all__ = ["ContextEngine", "Prepared", "PreparedRun", "Prompt", "PromptSection", "RunSpec", "resolve_budget"]
