"""Subscribes to one Capsid resource with the official MCP Python SDK and reports, one JSON
line at a time on stdout, what happened: `{"event": "subscribed"}` once the server accepted the
subscription (or `{"event": "refused", "error": ...}` and exit 1), then
`{"event": "updated", "uri": ...}` for each `notifications/resources/updated`, and exits 0 after
the number of updates asked for (or 2 when none came within the wait).

usage: subscribe.py <mcp-url> <bearer-key> <uri> [updates=1] [wait-seconds=30]
"""

import json
import sys
import warnings

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def say(**event):
    print(json.dumps(event), flush=True)


async def main(url: str, key: str, uri: str, want: int, wait: float) -> int:
    updates: list[str] = []
    arrived = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(message.params.uri)
            say(event="updated", uri=message.params.uri)
            if len(updates) >= want:
                arrived.set()

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    async with http, streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            caps = init.capabilities.resources
            if caps is None or not caps.subscribe:
                say(event="refused", error="the server does not offer resources/subscribe")
                return 1
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    await session.subscribe_resource(uri)
            except MCPError as e:
                say(event="refused", error=str(e))
                return 1
            say(event="subscribed", protocol=init.protocol_version)
            with anyio.move_on_after(wait):
                await arrived.wait()
            return 0 if len(updates) >= want else 2


if __name__ == "__main__":
    url, key, uri = sys.argv[1:4]
    want = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    wait = float(sys.argv[5]) if len(sys.argv) > 5 else 30.0
    sys.exit(anyio.run(main, url, key, uri, want, wait))
