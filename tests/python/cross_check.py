"""Cross-check of the countersign MCP server with the official Python MCP SDK (`mcp` 2.x).

An independent client (not rmcp) drives the real binary over stdio:

    python3 tests/python/cross_check.py path/to/countersign

It makes a throwaway home and channel (`countersign init`), connects one session as
`frontend` and one as `backend`, and prints one line per check. Every tool that declares an
`outputSchema` is called with real arguments until each has answered at least once without
`isError`: the SDK's `call_tool` validates such an answer's `structuredContent` against the
schema and raises when it does not conform (tests/python_client.rs relies on that). Exit 0 when every check
passes; exit 1 at the first failure (with what was expected and what came back); exit 2 on
a usage or setup problem. Run by tests/it/python_client.rs; needs tests/python/requirements.txt.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from contextlib import AsyncExitStack
from typing import Any

try:
    from checks import (READ_ONLY, TOOLS, CheckFailed, at, call_ok, expect, ok, run_checks, text_of,
                        validated)
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import PaginatedRequestParams
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"cross_check: the Python MCP SDK is not installed ({e}); "
          "pip install -r tests/python/requirements.txt", file=sys.stderr)
    sys.exit(2)

ROLES = ("frontend", "backend")
TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Where board_link starts its loopback server: a free port, so that runs in parallel
# never meet; the server is stopped with `countersign board --stop` at the end.
BOARD_LISTEN = f"127.0.0.1:{free_port()}"


async def connect(stack: AsyncExitStack, binary: str, home: str, channel: str, role: str) -> ClientSession:
    params = StdioServerParameters(
        command=binary,
        args=["mcp", "--role", role, "--channel", channel, "--board-listen", BOARD_LISTEN],
        # Merged over the SDK's small default environment (PATH, HOME, ...), so no
        # COUNTERSIGN_ROLE or COUNTERSIGN_CHANNEL from the caller leaks in.
        env={"COUNTERSIGN_HOME": home},
    )
    read, write = await stack.enter_async_context(stdio_client(params))
    return await stack.enter_async_context(ClientSession(read, write))


async def list_all_tools(session: ClientSession) -> list[Any]:
    tools = []
    res = await session.list_tools()
    tools.extend(res.tools)
    while res.next_cursor:
        res = await session.list_tools(params=PaginatedRequestParams(cursor=res.next_cursor))
        tools.extend(res.tools)
    return tools


async def run(binary: str, home: str, channel: str) -> None:
    at("spawn the servers")
    async with AsyncExitStack() as stack:
        fe = await connect(stack, binary, home, channel, "frontend")
        be = await connect(stack, binary, home, channel, "backend")

        # initialize
        at("connect and initialize")
        for role, session in (("frontend", fe), ("backend", be)):
            init = await session.initialize()
            name = f"initialize ({role})"
            expect(init.server_info.name == "countersign", name,
                   f"server name {init.server_info.name!r}, expected 'countersign'")
            expect(init.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS, name,
                   f"protocol version {init.protocol_version!r} not in {HANDSHAKE_PROTOCOL_VERSIONS}")
            expect(init.capabilities.tools is not None, name, "the server does not declare tools")
            ok(name, f"{init.server_info.name} {init.server_info.version}, protocol {init.protocol_version}")

        # tools/list
        at("tools/list")
        tools = await list_all_tools(fe)
        names = [t.name for t in tools]
        expect(names == TOOLS, "tools/list order", f"got {names}, expected {TOOLS}")
        ok("tools/list order", f"{len(names)} tools")
        for t in tools:
            a = t.annotations
            expect(a is not None, "tools/list annotations", f"{t.name} has no annotations")
            want = t.name in READ_ONLY
            expect(a.read_only_hint is want, "tools/list annotations",
                   f"{t.name}.read_only_hint is {a.read_only_hint!r}, expected {want}")
        ok("tools/list annotations", f"read_only_hint true for {len(READ_ONLY)}, false for {len(TOOLS) - len(READ_ONLY)}")
        n_props = 0
        for t in tools:
            schema = t.input_schema
            expect(schema.get("type") == "object", "tools/list schemas", f"{t.name} input schema is not an object: {schema}")
            for prop, ps in (schema.get("properties") or {}).items():
                d = ps.get("description") if isinstance(ps, dict) else None
                expect(isinstance(d, str) and d.strip() != "", "tools/list schemas",
                       f"{t.name}.{prop} has no description: {ps}")
                n_props += 1
        ok("tools/list schemas", f"{n_props} input properties, all described")

        # send_message frontend -> backend
        at("send_message")
        topic, body = "schema", "please review the invoice schema (python cross-check)"
        res = await fe.call_tool("send_message", {"to": "backend", "topic": topic, "body": body})
        expect(res.is_error is not True, "send_message", f"refused: {res.structured_content!r}")
        sent = res.structured_content or {}
        mid = sent.get("id")
        expect(isinstance(mid, str) and len(mid) == 12, "send_message", f"no 12-character id in {sent!r}")
        try:
            as_text = json.loads(text_of(res, "send_message"))
        except json.JSONDecodeError as e:
            raise CheckFailed(f"send_message: content[0].text is not JSON: {e}") from e
        expect(as_text == sent, "send_message", f"text content {as_text!r} differs from structured {sent!r}")
        ok("send_message frontend -> backend", f"id {mid}")

        # read_inbox as backend
        at("read_inbox")
        inbox = await call_ok(be, "read_inbox", {})
        rows = inbox.get("result")
        expect(isinstance(rows, list) and len(rows) == 1, "read_inbox", f"expected one row, got {inbox!r}")
        row = rows[0]
        expect(row.get("id") == mid, "read_inbox", f"id {row.get('id')!r}, expected {mid!r}")
        expect(row.get("from") == "frontend" and row.get("to") == "backend", "read_inbox",
               f"from/to {row.get('from')!r}/{row.get('to')!r}")
        ok("read_inbox (backend)", f"sees {mid} from frontend")

        # mark_read
        at("mark_read")
        marked = await call_ok(be, "mark_read", {"message_id": mid})
        expect(marked.get("already_read") is False, "mark_read", f"expected already_read false: {marked!r}")
        inbox = await call_ok(be, "read_inbox", {})
        expect(inbox.get("result") == [], "mark_read", f"inbox not empty after mark_read: {inbox!r}")
        ok("mark_read", "inbox empty afterwards")

        # a refusal: send to self
        at("send to self")
        res = await fe.call_tool("send_message", {"to": "frontend", "topic": "t", "body": "b"})
        name = "refusal (send to self)"
        expect(res.is_error is True, name, f"is_error is {res.is_error!r}: {res!r}")
        sc = res.structured_content
        expect(isinstance(sc, dict) and set(sc) == {"error", "message"}, name,
               f"structured_content {sc!r}, expected keys error and message")
        expect(sc["error"] == "ValueError", name, f"error kind {sc['error']!r}, expected 'ValueError'")
        expect("cannot send to self" in sc["message"], name, f"message {sc['message']!r}")
        expect(text_of(res, name) == sc["message"], name, "content[0].text differs from the message")
        ok(name, f"ValueError: {sc['message']}")

        # search_messages
        at("search_messages")
        found = await call_ok(fe, "search_messages", {"query": "invoice"})
        hits = [r.get("id") for r in found.get("result") or []]
        expect(mid in hits, "search_messages", f"{mid} not among the hits {hits}")
        ok("search_messages", f"'invoice' finds {mid}")

        # every tool with an outputSchema, at least once, its answer checked by the SDK
        await every_output_schema(tools, fe, be, mid)

        # get_protocol
        at("get_protocol")
        res = await be.call_tool("get_protocol", {})
        expect(res.is_error is not True, "get_protocol", f"refused: {res!r}")
        doc = text_of(res, "get_protocol")
        expect(doc.startswith("# ") and "\n## " in doc, "get_protocol", f"not a markdown document: {doc[:80]!r}")
        expect(all(t in doc for t in TOOLS), "get_protocol",
               f"does not mention every tool: missing {[t for t in TOOLS if t not in doc]}")
        ok("get_protocol", f"markdown, {len(doc)} characters, first line {doc.splitlines()[0]!r}")


async def every_output_schema(tools: list[Any], fe: ClientSession, be: ClientSession, mid: str) -> None:
    """Drives every tool that declares an outputSchema to an answer, each alternative of a
    union result (one message or a list, found or not, preview or applied, reply or time-out)
    and each `fields` projection at least once."""
    declared = {t.name for t in tools if t.output_schema is not None}
    for t in tools:
        if t.output_schema is not None:
            expect(t.output_schema.get("type") == "object", "tools/list outputSchema",
                   f"{t.name}: root type {t.output_schema.get('type')!r}, expected 'object'")
    documents = {"get_protocol", "get_charter_template"}
    expect(declared == set(TOOLS) - documents, "tools/list outputSchema",
           f"without one: {sorted(set(TOOLS) - documents - declared)}")

    async def send(s: ClientSession, to: str, topic: str, body: str, **extra: Any) -> str:
        return (await call_ok(s, "send_message", {"to": to, "topic": topic, "body": body, **extra}))["id"]

    # mail
    await call_ok(be, "mark_read", {"message_ids": [mid]})
    await call_ok(be, "read_inbox", {"unread_only": False, "fields": "headers"})
    await call_ok(fe, "list_messages", {})
    await call_ok(fe, "list_messages", {"fields": ["id", "topic", "to"], "limit": 1})
    reply = await send(be, "frontend", "re: schema", "looks fine", reply_to=mid)
    await call_ok(fe, "get_thread", {"message_id": mid})
    await call_ok(fe, "get_thread", {"message_id": mid, "fields": "headers"})
    await call_ok(fe, "search_messages", {"query": "fi", "fields": ["id", "snippet", "match"]})
    await call_ok(fe, "wait_for_reply", {"message_id": mid, "timeout_s": 5})
    await call_ok(fe, "wait_for_reply", {"message_id": reply, "timeout_s": 0})
    await call_ok(fe, "wait_for_mail", {"ignore_backlog": False, "timeout_s": 1})
    await call_ok(be, "wait_for_mail", {"timeout_s": 0})

    # a debt through its lifecycle
    debt = await send(fe, "backend", "fix it", "the invoice total is off", action_required=True)
    await call_ok(be, "open_obligations", {})
    await call_ok(be, "open_obligations", {"fields": "headers"})
    await call_ok(be, "ready_work", {})
    await call_ok(be, "set_work_status", {"message_id": debt, "work_status": "in_progress"})
    await call_ok(be, "set_work_status", {"message_id": debt, "work_status": "in_progress"})
    await call_ok(be, "resolve_message", {"message_id": debt, "resolution_note": "fixed"})
    await call_ok(fe, "reopen_message", {"message_id": debt, "reason": "not quite"})
    await call_ok(be, "resolve_message", {"message_id": debt})
    await call_ok(fe, "confirm_resolution", {"message_id": debt})
    await call_ok(fe, "message_history", {"message_id": debt})
    await call_ok(fe, "channel_status", {})
    await call_ok(be, "channel_status", {})

    # uploads
    up = (await call_ok(fe, "upload_content", {"text": "a document", "label": "doc"}))["upload_id"]
    await call_ok(fe, "seal_content", {"upload_id": up})
    await call_ok(fe, "get_content", {"upload_id": up, "with_body": True})

    # votes and revisions
    proc = {"kind": "proc", "pin_key": None, "about_message_id": None}
    vote_on = await send(fe, "backend", "adopt the schema", "shall we?", **proc)
    await call_ok(be, "awaiting_ack", {})
    await call_ok(be, "awaiting_ack", {"fields": ["id", "obligation", "age_days"]})
    await call_ok(be, "acknowledge", {"message_id": vote_on, "decision": "agree", "note": "yes"})
    await call_ok(fe, "get_acknowledgements", {"message_id": vote_on})
    await call_ok(fe, "get_acknowledgements", {"message_id": vote_on, "fields": "headers"})
    await call_ok(fe, "revise_message", {"message_id": vote_on, "body": "shall we, then?"})
    await call_ok(fe, "get_acknowledgements", {"message_id": vote_on})

    # pins
    notes = {"key": "notes", "title": "notes rules", "version": "1", "body": "owned by frontend"}
    await call_ok(fe, "pin_set", {**notes, "dry_run": True})
    await call_ok(fe, "pin_set", notes)
    await call_ok(be, "pin_set", {**notes, "version": "2", "dry_run": True})
    await call_ok(fe, "pin_get", {"key": "notes"})
    await call_ok(fe, "pin_get", {"key": "no-such-key"})
    await call_ok(fe, "pin_list", {})
    await call_ok(fe, "pin_history", {"key": "notes"})
    await call_ok(fe, "pin_history", {"key": "notes", "fields": "headers"})
    await call_ok(be, "channel_status", {})

    # a cleanup pass: a proposal citing a deleted draft, previewed, applied and undone
    draft = await send(fe, "backend", "draft", "an early draft")
    follow = await send(fe, "backend", "follow-up", f"about #{draft}", **proc)
    word = await send(fe, "backend", "go ahead", f"clean up #{follow}")
    await call_ok(fe, "delete_message", {"message_id": draft})
    await call_ok(be, "backfill_superseded", {})
    await call_ok(be, "backfill_superseded", {"fields": "headers", "include_by_reference": True})
    await call_ok(be, "backfill_superseded", {"dry_run": False, "ids": [follow], "expect_count": 1,
                                              "key": "notes", "word_message_id": word})
    await call_ok(fe, "undo_backfill", {"ids": [follow], "reason": "too early"})

    # about
    await call_ok(fe, "list_roles", {})
    await call_ok(fe, "server_build", {})
    await call_ok(fe, "board_link", {"label": "cross-check"})

    # the memory (memory_date is outside the default set)
    view = await call_ok(fe, "memory_view", {})
    first = view["view"].splitlines()[0]
    line, items = first.split("|", 1)[0].split("+")
    await call_ok(fe, "memory_zoom", {"id": line, "n": int(items)})
    await call_ok(fe, "memory_thread", {"id": line, "n": 2})
    await call_ok(fe, "memory_search", {"query": "hello"})
    item = next(l for l in view["view"].splitlines() if "+1|" in l)
    await call_ok(fe, "memory_read", {"id": item.split("+", 1)[0]})

    missing = sorted(declared - validated)
    expect(not missing, "outputSchema coverage", f"never answered without isError: {missing}")
    ok("structured output", f"{len(declared)} tools with an outputSchema, every answer validated by the SDK")


def main() -> int:
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} PATH_TO_COUNTERSIGN", file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    if not os.access(binary, os.X_OK):
        print(f"cross_check: {binary} is not an executable", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="countersign-py-") as tmp:
        home, channel = os.path.join(tmp, "home"), os.path.join(tmp, "channel")
        env = {k: v for k, v in os.environ.items()
               if k not in ("COUNTERSIGN_ROLE", "AI_AGENT_CHANNEL_ROLE", "COUNTERSIGN_CHANNEL")}
        env["COUNTERSIGN_HOME"] = home
        init = subprocess.run(
            [binary, "init", channel, "--roles", ",".join(ROLES), "--name", "pycheck"],
            env=env, capture_output=True, text=True, timeout=60,
        )
        if init.returncode != 0:
            print(f"FAIL countersign init (exit {init.returncode}): {init.stderr.strip()}", flush=True)
            return 1
        ok("countersign init", f"roles {','.join(ROLES)}")

        try:
            if not run_checks(lambda: run(binary, home, channel), TIMEOUT_S):
                return 1
        finally:
            subprocess.run([binary, "--channel", channel, "board", "--stop"],
                           env=env, capture_output=True, text=True, timeout=60)
    print("cross_check: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
