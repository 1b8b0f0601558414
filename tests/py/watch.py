"""Watches Capsid resources with the official MCP Python SDK, in either of its modes, and
reports what happened one JSON line at a time on stdout.

- `modern`: the 2026-07-28 protocol, no handshake (the client discovers the server's
  versions, then needs no session): one `subscriptions/listen` stream (`Client.listen`).
- `handshake`: the `initialize` handshake and a session: `resources/subscribe` for each URI
  and the session's own notifications, as clients of 2025-11-25 and before watch.

Events: `{"event": "watching", "protocol": ..., "honored": {...}}` once the server accepted
(or `{"event": "refused", "error": ...}` and exit 1); then `{"event": "updated", "uri": ...}`
for each resource update and `{"event": "tools_changed"}` for each tool-list change. It exits
0 after the number of events asked for; 2 when they did not come within the wait; 3 after
`{"event": "lost", "error": ...}` when the server ended the stream with an error; 4 after
`{"event": "closed"}` when the server closed it gracefully (shutting down).

usage: watch.py <modern|handshake> <mcp-url> <bearer-key> <events> <wait-seconds> [--tools] <uri>...

With `events` 0 it waits for the stream to end (lost or closed) or the wait to pass.
"""

import json
import sys
import warnings

import anyio
import mcp_types as types
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ResourceUpdated, SubscriptionLost, ToolsListChanged
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def say(**event):
    print(json.dumps(event), flush=True)


def refused(error: BaseException) -> int:
    say(event="refused", error=str(error))
    return 1


async def modern(client: Client, uris: list[str], tools: bool, want: int, wait: float) -> int:
    try:
        listening = client.listen(tools_list_changed=tools, resource_subscriptions=uris)
        async with listening as stream:
            honored = stream.honored.model_dump(by_alias=True, exclude_none=True)
            say(event="watching", protocol=client.protocol_version, honored=honored)
            seen = 0
            with anyio.move_on_after(wait):
                try:
                    async for event in stream:
                        if isinstance(event, ResourceUpdated):
                            say(event="updated", uri=event.uri)
                        elif isinstance(event, ToolsListChanged):
                            say(event="tools_changed")
                        seen += 1
                        if want and seen >= want:
                            return 0
                except SubscriptionLost as lost:
                    say(event="lost", error=str(lost.__cause__ or lost))
                    return 3
                say(event="closed")
                return 4
            return 2
    except MCPError as e:
        return refused(e)


async def handshake(client: Client, uris: list[str], want: int, wait: float, events) -> int:
    caps = client.server_capabilities.resources
    if uris and (caps is None or not caps.subscribe):
        return refused(RuntimeError("the server does not offer resources/subscribe"))
    try:
        with warnings.catch_warnings():
            # The SDK warns that resources/subscribe is removed as of 2026-07-28: this is the
            # older clients' path on purpose.
            warnings.simplefilter("ignore")
            for uri in uris:
                await client.subscribe_resource(uri)
    except MCPError as e:
        return refused(e)
    say(event="watching", protocol=client.protocol_version, honored={"resourceSubscriptions": uris})
    seen = 0
    with anyio.move_on_after(wait):
        async for event in events:
            say(**event)
            seen += 1
            if want and seen >= want:
                return 0
    return 2


async def main(mode: str, url: str, key: str, want: int, wait: float, tools: bool, uris: list[str]) -> int:
    send, receive = anyio.create_memory_object_stream(64)

    async def on_message(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            await send.send({"event": "updated", "uri": message.params.uri})
        elif isinstance(message, types.ToolListChangedNotification):
            await send.send({"event": "tools_changed"})

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    async with http:
        transport = streamable_http_client(url, http_client=http)
        # `auto` discovers the server's versions and takes 2026-07-28 without a handshake;
        # `legacy` forces the initialize handshake.
        connect = "auto" if mode == "modern" else "legacy"
        async with Client(transport, mode=connect, message_handler=on_message, cache=None) as client:
            if mode == "modern":
                return await modern(client, uris, tools, want, wait)
            return await handshake(client, uris, want, wait, receive)


if __name__ == "__main__":
    mode, url, key, want, wait = sys.argv[1:6]
    rest = sys.argv[6:]
    tools = "--tools" in rest
    uris = [a for a in rest if a != "--tools"]
    if mode not in ("modern", "handshake"):
        sys.exit(f"mode must be modern or handshake, not {mode!r}")
    sys.exit(anyio.run(main, mode, url, key, int(want), float(wait), tools, uris))
