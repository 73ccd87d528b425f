"""Test helpers: a misbehaving OpenAI-compatible SSE server (`openai_server`)
and a real App around the scripted fake model for run tests (`runs_rig`)."""
