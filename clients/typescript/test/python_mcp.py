"""The Python MCP SDK's answers, for test/mcp.test.ts to compare with the TypeScript SDK's.

Reads a JSON plan on stdin: ``{"transport": {"command", "args", "env"} | {"url", "key"},
"calls": [{"tool", "arguments"}]}``; connects with the official Python SDK (stdio or streamable
HTTP), lists the tools, makes the calls in order and prints ``{"tools": [...], "results": [...]}``
as JSON (each result: ``isError``, ``structuredContent``, ``content``, as on the wire).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


@contextlib.asynccontextmanager
async def session(transport: dict[str, Any]) -> AsyncIterator[ClientSession]:
    if "url" in transport:
        headers = {"Authorization": f"Bearer {transport['key']}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http,
            streamable_http_client(transport["url"], http_client=http) as (read, write),
            ClientSession(read, write) as opened,
        ):
            await opened.initialize()
            yield opened
        return
    params = StdioServerParameters(
        command=transport["command"], args=transport["args"], env=transport.get("env")
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as opened,
        ):
            await opened.initialize()
            yield opened


def wire(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main() -> None:
    plan = json.load(sys.stdin)
    async with session(plan["transport"]) as opened:
        tools = (await opened.list_tools()).tools
        results = []
        for call in plan["calls"]:
            result = await opened.call_tool(call["tool"], call["arguments"])
            results.append(
                {
                    "isError": bool(result.is_error),
                    "structuredContent": result.structured_content,
                    "content": [wire(block) for block in result.content],
                }
            )
    json.dump({"tools": [wire(tool) for tool in tools], "results": results}, sys.stdout)


if __name__ == "__main__":
    anyio.run(main)
