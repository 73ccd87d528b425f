"""game-sidecar: a local gRPC sidecar that gives game characters an LLM voice."""

__all__ = ["__version__", "PROTOCOL_VERSION"]

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
