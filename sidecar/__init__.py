"""game-sidecar: a local gRPC sidecar that gives game characters an LLM voice.

The protocol version, with the rest of the process contract, is in
sidecar/process_contract.py."""

__all__ = ["__version__"]

__version__ = "0.1.0"
