"""Privacy by construction: what a model may see of a session, and the way back.

- `Projection`: one actor's view (aliases, perspective, coordinate suppression)
  and reverse mapping of aliases the model returns (`resolve`).
- `AliasRejected`: the model named an alias it was never given or may not see.

Engine IDs inside text are found by `sidecar.idsearch` (also used by the leak
guard, `sidecar.llm.guard`).

Aliases themselves are assigned by `sidecar.state.aliases` when an entity is
created, so journal replay and exports reproduce them. docs/privacy.md has the rules.
"""

from sidecar.projection.projection import AliasRejected, Projection

__all__ = ["AliasRejected", "Projection"]
