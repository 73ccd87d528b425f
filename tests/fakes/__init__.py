"""Fakes for tests: a misbehaving OpenAI-compatible SSE server, a stand-in
context engine, and a helper that serves AgentService on a real socket."""
