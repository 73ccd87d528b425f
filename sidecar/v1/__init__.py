"""Generated from proto/sidecar/v1 by scripts/gen_protos.py. Do not edit."""
