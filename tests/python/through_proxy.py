"""An MCP round trip over HTTPS through a reverse proxy, with the Python MCP SDK.

    python3 tests/python/through_proxy.py URL CA_FILE SENDER_TOKEN READER_TOKEN

Connects to URL (https://…/mcp) trusting only CA_FILE, as the sender sends a debt to the
reader's role, then as the reader finds it in read_inbox. Prints the message id and exits 0;
exits 1 with what went wrong. Run by tests/it/serve_proxy.rs.
"""

from __future__ import annotations

import json
import ssl
import sys

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def call(url: str, ca: str, token: str, tool: str, args: dict) -> dict:
    context = ssl.create_default_context(cafile=ca)
    async with httpx2.AsyncClient(
        verify=context, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool(tool, args)
                if result.is_error:
                    raise SystemExit(f"{tool} refused: {result.content}")
                return json.loads(result.content[0].text)


async def main() -> None:
    url, ca, sender, reader = sys.argv[1:5]
    sent = await call(url, ca, sender, "send_message", {
        "to": "frontend", "topic": "through the proxy", "body": "TLS ends at the proxy",
        "action_required": True,
    })
    inbox = await call(url, ca, reader, "read_inbox", {})
    ids = [m["id"] for m in inbox["result"]]
    if sent["id"] not in ids:
        raise SystemExit(f"the reader's inbox lacks {sent['id']}: {inbox}")
    print(sent["id"])


anyio.run(main)
