"""Test helpers: a misbehaving OpenAI-compatible SSE server (`openai_server`),
a real App around the scripted fake model for run tests (`runs_rig`), and a
clock moved by hand for timing code (`clock`)."""
