"""Thin gRPC adapters: proto <-> domain, domain errors -> status. Only these,
`sidecar.server` and `sidecar.client` import generated code."""
