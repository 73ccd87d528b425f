"""Proto <-> domain conversion for session state, one module per concern:

- `convert_state_from_pb`: DeltaOp -> ops.Op, Snapshot -> model.World (structure checks)
- `convert_state_to_pb`: model.World -> Snapshot
- `convert_options`: SessionOptions both ways
- `convert_enums`: the enum tables, read from the proto descriptors

Import from here; the split is by concern, not a second API.
"""

from __future__ import annotations

from sidecar.servicers.convert_options import options_from_pb, options_to_pb
from sidecar.servicers.convert_state_from_pb import ops_from_pb, world_from_pb
from sidecar.servicers.convert_state_to_pb import world_to_pb

__all__ = [
    "ops_from_pb",
    "world_from_pb",
    "world_to_pb",
    "options_from_pb",
    "options_to_pb",
]
