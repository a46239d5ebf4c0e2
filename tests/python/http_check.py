"""The official Python MCP SDK (`mcp` 2.x) against `countersign serve` over streamable HTTP.

    COUNTERSIGN_TOKEN_FRONTEND=cst_… COUNTERSIGN_TOKEN_BACKEND=cst_… \\
        python3 tests/python/http_check.py http://127.0.0.1:PORT/mcp

Two sessions, one per role token (`frontend`, `backend`), each with its token in an
`Authorization: Bearer` header (never an argument), run a debt through its lifecycle: a send
with `action_required`, the addressee's read and resolve, the author's confirm. Every answer
is checked as cross_check.py checks the stdio server: the SDK validates `structuredContent`
against the tool's `outputSchema`, and the text content is the same JSON. It also checks that
a role cannot be claimed by an argument and that a wrong token opens no session. Prints one
line per check and, last, one JSON line `{"debt": ID, "reply": ID}` for the caller to find in
the channel's log. Exit 0 when every check passes, 1 at the first failure, 2 on a usage
problem. Run by tests/it/serve_mcp.rs; needs tests/python/requirements.txt.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import AsyncExitStack
from typing import Any

try:
    import anyio
    import httpx2
    from checks import (TOOLS, CheckFailed, at, call_ok, expect, leaf_failures, ok, run_checks,
                        text_of)
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"http_check: the Python MCP SDK is not installed ({e}); "
          "pip install -r tests/python/requirements.txt", file=sys.stderr)
    sys.exit(2)

TIMEOUT_S = 120

# Over HTTP a role token also gets the board's link.
HTTP_ONLY = {"board_link"}


async def refused(session: ClientSession, tool: str, args: dict[str, Any], kind: str, needle: str) -> str:
    """Calls a tool that must be refused as over stdio: isError, `{error, message}`."""
    at(tool)
    res = await session.call_tool(tool, args)
    name = f"refusal of {tool}"
    expect(res.is_error is True, name, f"is_error is {res.is_error!r}: {res!r}")
    sc = res.structured_content
    expect(isinstance(sc, dict) and set(sc) == {"error", "message"}, name,
           f"structured_content {sc!r}, expected keys error and message")
    expect(sc["error"] == kind, name, f"error kind {sc['error']!r}, expected {kind!r}")
    expect(needle in sc["message"], name, f"{needle!r} not in {sc['message']!r}")
    expect(text_of(res, name) == sc["message"], name, "content[0].text differs from the message")
    return sc["message"]


async def connect(stack: AsyncExitStack, url: str, token: str) -> ClientSession:
    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                           timeout=httpx2.Timeout(30, read=300)))
    read, write = await stack.enter_async_context(streamable_http_client(url, http_client=http))
    return await stack.enter_async_context(ClientSession(read, write))


async def run(url: str, fe_token: str, be_token: str) -> dict[str, str]:
    async with AsyncExitStack() as stack:
        at("connect and initialize")
        fe = await connect(stack, url, fe_token)
        be = await connect(stack, url, be_token)
        for role, session in (("frontend", fe), ("backend", be)):
            init = await session.initialize()
            expect(init.server_info.name == "countersign", f"initialize ({role})",
                   f"server name {init.server_info.name!r}")
            expect(init.capabilities.tools is not None, f"initialize ({role})", "no tools capability")
            ok(f"initialize over HTTP ({role})", f"protocol {init.protocol_version}")

        at("tools/list")
        tools = (await fe.list_tools()).tools
        names = [t.name for t in tools]
        expect(names[:len(TOOLS)] == TOOLS and set(names[len(TOOLS):]) <= HTTP_ONLY, "tools/list",
               f"got {names}, expected the stdio list {TOOLS}, in its order, and at most "
               f"{sorted(HTTP_ONLY - set(TOOLS))} after it")
        ok("tools/list", f"the {len(TOOLS)} mailbox tools of stdio, in order, then {names[len(TOOLS):]}")

        # Who is calling comes from the token: list_roles says which role this session is.
        for role, session in (("frontend", fe), ("backend", be)):
            roles = await call_ok(session, "list_roles", {})
            expect(roles.get("you") == role, "list_roles", f"you is {roles.get('you')!r}, expected {role!r}")
        ok("list_roles", "each session is its token's role")

        # The debt.
        at("send_message")
        sent = await call_ok(fe, "send_message", {
            "to": "backend", "topic": "invoice totals",
            "body": "the invoice total is off by the tax (over HTTP)", "action_required": True,
        })
        debt = sent.get("id")
        expect(isinstance(debt, str) and len(debt) == 12, "send_message", f"no 12-character id in {sent!r}")
        ok("send_message action_required (frontend -> backend)", f"id {debt}")

        inbox = await call_ok(be, "read_inbox", {})
        rows = inbox.get("result")
        expect(isinstance(rows, list) and [r.get("id") for r in rows] == [debt], "read_inbox",
               f"expected just {debt}, got {inbox!r}")
        row = rows[0]
        expect(row.get("from") == "frontend" and row.get("to") == "backend", "read_inbox",
               f"from/to {row.get('from')!r}/{row.get('to')!r}")
        expect(row.get("action_required") is True, "read_inbox", f"not a debt: {row!r}")
        ok("read_inbox (backend)", f"{debt} from frontend, action_required")

        owed = await call_ok(be, "open_obligations", {})
        expect(debt in json.dumps(owed), "open_obligations", f"{debt} not owed by backend: {owed!r}")
        ok("open_obligations (backend)", f"owes {debt}")

        reply = await call_ok(be, "send_message", {
            "to": "frontend", "topic": "re: invoice totals", "body": "fixed in the tax rounding",
            "reply_to": debt,
        })
        resolved = await call_ok(be, "resolve_message", {"message_id": debt, "resolution_note": "fixed"})
        expect(resolved.get("id") == debt and resolved.get("resolved_by") == "backend"
               and resolved.get("already_resolved") is False, "resolve_message", f"{resolved!r}")
        ok("resolve_message (backend)", f"status {resolved.get('status')!r}, resolved_by backend")

        confirmed = await call_ok(fe, "confirm_resolution", {"message_id": debt})
        expect(confirmed.get("id") == debt and confirmed.get("already_confirmed") is False,
               "confirm_resolution", f"{confirmed!r}")
        ok("confirm_resolution (frontend)", debt)

        again = await call_ok(fe, "confirm_resolution", {"message_id": debt})
        expect(again.get("already_confirmed") is True, "confirm_resolution again", f"{again!r}")
        owed = await call_ok(be, "open_obligations", {})
        expect(debt not in json.dumps(owed), "open_obligations after confirm", f"{debt} still owed: {owed!r}")
        history = await call_ok(fe, "message_history", {"message_id": debt})
        events = [e.get("event") for e in history.get("result", history.get("events", []))
                  if isinstance(e, dict)]
        ok("after the confirm", f"nothing owed; history {events}")

        # Refusals are the stdio ones.
        await refused(fe, "send_message", {"to": "frontend", "topic": "t", "body": "b"},
                      "ValueError", "cannot send to self")
        msg = await refused(be, "send_message",
                            {"to": "frontend", "topic": "t", "body": "b", "role": "frontend"},
                            "ValueError", "role")
        ok("refusals as over stdio", f"a role in the arguments is refused: {msg[:80]}")

    # A wrong token opens no session.
    at("a wrong token")
    try:
        with anyio.fail_after(30):
            async with AsyncExitStack() as stack:
                bad = await connect(stack, url, "cst_" + "0" * 64)
                await bad.initialize()
        raise CheckFailed("a wrong token: the session was opened")
    except CheckFailed:
        raise
    except BaseException as e:  # noqa: BLE001 - the SDK raises (or groups) its HTTP error
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        text = " ".join(str(x) for x in leaf_failures(e))
        ok("a wrong token is refused", text[:120])
    return {"debt": debt, "reply": reply["id"]}


def main() -> int:
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} URL (tokens in COUNTERSIGN_TOKEN_FRONTEND and "
              "COUNTERSIGN_TOKEN_BACKEND)", file=sys.stderr)
        return 2
    url = sys.argv[1]
    fe_token = os.environ.get("COUNTERSIGN_TOKEN_FRONTEND", "")
    be_token = os.environ.get("COUNTERSIGN_TOKEN_BACKEND", "")
    if not fe_token or not be_token:
        print("http_check: set COUNTERSIGN_TOKEN_FRONTEND and COUNTERSIGN_TOKEN_BACKEND", file=sys.stderr)
        return 2
    out: dict[str, str] = {}

    async def checks() -> None:
        out.update(await run(url, fe_token, be_token))

    if not run_checks(checks, TIMEOUT_S):
        return 1
    print("http_check: all checks passed", flush=True)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
