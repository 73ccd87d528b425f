"""Privacy by construction: what a model may see of a session, and the way back.

- `Projection`: one actor's view (aliases, perspective, coordinate suppression)
  and reverse mapping of aliases the model returns (`resolve`).
- `AliasRejected`: the model named an alias it was never given or may not see.
- `IdMatcher`: whole-token search for engine IDs in text (also used by the
  leak guard, `sidecar.llm.guard`).

Aliases themselves are assigned by `sidecar.state.aliases` when an entity is
created, so journal replay and exports reproduce them. docs/privacy.md has the rules.
"""

from sidecar.projection.idmatch import MIN_ID_LENGTH, IdMatcher, searchable
from sidecar.projection.projection import AliasRejected, Projection

__all__ = ["AliasRejected", "Projection", "IdMatcher", "MIN_ID_LENGTH", "searchable"]
