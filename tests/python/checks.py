"""What the Python SDK checks of countersign share: the tool list, the check helpers and the
report of a failed run. Imported by cross_check.py (stdio) and http_check.py (HTTP), which run
as scripts from this folder.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import ClientSession

# The tools of a session's server (`countersign mcp`, and a role token over HTTP), in order.
TOOLS = [
    "send_message", "read_inbox", "mark_read", "delete_message", "list_messages",
    "search_messages", "resolve_message", "confirm_resolution", "reopen_message",
    "open_obligations", "set_work_status", "ready_work", "awaiting_ack", "get_thread",
    "upload_content", "seal_content", "get_content", "revise_message", "message_history",
    "pin_set", "pin_get", "pin_list", "pin_history", "acknowledge", "get_acknowledgements",
    "backfill_superseded", "undo_backfill", "list_roles", "channel_status", "wait_for_reply",
    "wait_for_mail", "server_build", "get_protocol", "get_charter_template", "board_link",
    "memory_view",
    "memory_zoom", "memory_read", "memory_search", "memory_thread",
]
READ_ONLY = {
    "list_messages", "search_messages", "open_obligations", "ready_work", "awaiting_ack",
    "get_thread", "get_content", "message_history", "pin_get", "pin_list", "pin_history",
    "get_acknowledgements", "list_roles", "wait_for_reply", "wait_for_mail", "server_build",
    "get_protocol", "get_charter_template", "memory_view", "memory_zoom", "memory_read",
    "memory_search", "memory_thread",
}


class CheckFailed(Exception):
    pass


# What the run is doing, so an unexpected error (a closed connection, a protocol error)
# says where it happened.
step = "starting"


def at(what: str) -> None:
    global step
    step = what


def ok(name: str, detail: str = "") -> None:
    print(f"ok   {name}" + (f": {detail}" if detail else ""), flush=True)


def expect(cond: bool, name: str, why: str) -> None:
    if not cond:
        raise CheckFailed(f"{name}: {why}")


def text_of(res: Any, name: str) -> str:
    expect(bool(res.content), name, f"no content in the result: {res!r}")
    first = res.content[0]
    expect(getattr(first, "type", None) == "text", name, f"content[0] is not text: {first!r}")
    return first.text


# Tools whose answer `call_tool` validated against the tool's outputSchema.
validated: set[str] = set()


async def call_ok(session: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Calls a tool that must succeed; returns its structured content.

    `call_tool` itself checks the structured content against the tool's outputSchema (and
    raises when it does not conform); the text must be the same JSON value (a value that is no
    object travels as `{result: value}`).
    """
    at(tool)
    res = await session.call_tool(tool, args)
    expect(res.is_error is not True, tool, f"refused: {res.structured_content!r} {res.content!r}")
    sc = res.structured_content
    expect(isinstance(sc, dict), tool, f"structured_content is not an object: {sc!r}")
    try:
        as_text = json.loads(text_of(res, tool))
    except json.JSONDecodeError as e:
        raise CheckFailed(f"{tool}: content[0].text is not JSON: {e}") from e
    wrapped = as_text if isinstance(as_text, dict) else {"result": as_text}
    expect(wrapped == sc, tool, f"text content {as_text!r} differs from structured {sc!r}")
    validated.add(tool)
    return sc


def leaf_failures(e: BaseException) -> list[BaseException]:
    """The exceptions inside (possibly nested) exception groups."""
    inner = getattr(e, "exceptions", None)
    if inner:
        return [x for sub in inner for x in leaf_failures(sub)]
    return [e]


def run_checks(checks: Callable[[], Awaitable[None]], timeout_s: float) -> bool:
    """Runs `checks` within `timeout_s`; prints why it failed and returns False if it did."""

    async def bounded() -> None:
        with anyio.fail_after(timeout_s):
            await checks()

    try:
        anyio.run(bounded)
    except BaseException as e:  # noqa: BLE001 - report whatever stopped the run
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        for leaf in leaf_failures(e):
            if isinstance(leaf, CheckFailed):
                print(f"FAIL {leaf}", flush=True)
            elif isinstance(leaf, TimeoutError):
                print(f"FAIL timed out after {timeout_s} s during {step}", flush=True)
            else:
                print(f"FAIL {step}: unexpected {type(leaf).__name__}: {leaf}", flush=True)
        return False
    return True
