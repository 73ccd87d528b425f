"""Prints, one a line, the litellm.proxy modules litellm's client path imports: a streamed
completion down the OpenAI path (mock_response: nothing is sent) and a token count, as the
sidecar's warm-up does (sidecar/llm/gateway.py). The spec keeps these and leaves the rest of
the proxy server out (600+ modules, 7 MB). Run by packaging/game-sidecar.spec at build time,
so a new litellm is measured, not remembered."""

import asyncio
import os
import sys
import warnings

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
warnings.simplefilter("ignore")

import litellm  # noqa: E402


async def _stream() -> None:
    stream = await litellm.acompletion(model="openai/probe", api_key="none", mock_response="ok", stream=True,
                                       messages=[{"role": "user", "content": "probe"}])
    async for _ in stream:
        pass


asyncio.run(_stream())
litellm.token_counter(model="openai/probe", text="probe")
print("\n".join(sorted(name for name in sys.modules if name.startswith("litellm.proxy"))))
