#!/usr/bin/env python3
"""A stand-in for the model APIs the real agent clients call, for the end-to-end tests
(tests/it/real_clients.rs). Python's standard library only.

It serves, on 127.0.0.1 and a free port:
  - Anthropic's Messages API (POST /v1/messages, streamed as server-sent events or not,
    and POST /v1/messages/count_tokens), for Claude Code with ANTHROPIC_BASE_URL;
  - OpenAI's Responses API (POST /v1/responses, streamed) and Chat Completions
    (POST /v1/chat/completions, streamed), for Codex with a custom `model_providers` entry.

It plays a fixed script, decided from each request alone (so retries and side requests
cannot put it out of step):
  - a request that offers no tool named `...send_message` (a title, a summary, a check)
    is answered with a short text;
  - a conversation with no call of that tool yet is answered with one call of it, with the
    arguments given by --send (a JSON object);
  - where the tool is deferred behind the client's ToolSearch tool (Claude Code's default:
    the request names it in a system reminder and carries no schema for it), the first
    answer is a ToolSearch call selecting it, as a real model's is;
  - any later turn is answered with the final text (--final).

With --script it plays a sequence of tool calls instead (see `script_turn`): each tool
once, in order, loaded through ToolSearch first where the client defers it.

With --compact it plays a compaction instead, for the compactor subagent of Claude Code:
  - a request offering the job tools (`...compact_next`, the subagent's) starts a worker,
    then submits one line per task of each job it is answered (jobs of one page), until an
    answer's status is not `job`; then it answers with that status as its final text;
  - a request offering the Agent tool and no job tool (the session) calls the subagent
    `countersign-compactor` once, then answers with the final text.

With --summarize it answers compaction jobs sent to the Messages API without tools, as
countersign's background compaction sends them: one valid summary line per `TASK n of m, line
<id>:` of the job, as a JSON array ([{"line", "text"}]); a request with no task (the key's
check) gets "ok". With --fail FILE, while FILE exists and holds a JSON object, every Messages
request is answered by it instead: {"status": 402, "retry_after": "120", "message": "..."} is
an error answer with that status (and a retry-after header when given); {"answer": "text"} is a
normal answer with that text (a model that answers nonsense). A test writes and removes the
file between requests to script failures.

Every request is appended to --record as one JSON line ({"method", "path", "body"}),
before it is answered, so a test can assert on what the client sent.

The first line on stdout is `PORT <n>` once the server listens; it serves until killed.
"""

import argparse
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
COUNTER = [0]


def next_id(prefix):
    with LOCK:
        COUNTER[0] += 1
        return f"{prefix}_{COUNTER[0]}"


def tool_names(body):
    """The tools a request offers, in every API's shape, as (namespace or None, name)."""
    names = []

    def walk(tools, namespace):
        for t in tools or []:
            if not isinstance(t, dict):
                continue
            # A namespace of tools (Codex groups an MCP server's tools under its name).
            if t.get("type") == "namespace" and isinstance(t.get("tools"), list):
                walk(t["tools"], t.get("name"))
                continue
            if isinstance(t.get("name"), str):
                names.append((namespace, t["name"]))
            fn = t.get("function")
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                names.append((namespace, fn["name"]))

    walk(body.get("tools"), None)
    return names


def send_tool(body):
    """The offered send_message tool as (namespace or None, name), or None."""
    for namespace, n in tool_names(body):
        if n == "send_message" or n.endswith("__send_message"):
            return (namespace, n)
    return None


def has_tool_result(body):
    """Whether the conversation already holds the result of a tool call."""
    for m in body.get("messages") or []:  # Anthropic, Chat Completions
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool":
            return True
        content = m.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    return True
    items = body.get("input")
    if isinstance(items, list):  # Responses
        for item in items:
            if isinstance(item, dict) and item.get("type") in (
                "function_call_output",
                "custom_tool_call_output",
                "mcp_tool_call_output",
            ):
                return True
    return False


def called(body, name):
    """Whether the conversation already holds a call of the tool `name` (or `<server>__name`)
    made by the model, in every API's shape."""

    def matches(n):
        return isinstance(n, str) and (n == name or n.endswith("__" + name))

    for m in body.get("messages") or []:  # Anthropic, Chat Completions
        if not isinstance(m, dict):
            continue
        content = m.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use" and matches(block.get("name")):
                    return True
        for call in m.get("tool_calls") or []:
            if isinstance(call, dict) and matches((call.get("function") or {}).get("name")):
                return True
    for item in body.get("input") or []:  # Responses
        if isinstance(item, dict) and item.get("type") == "function_call" and matches(item.get("name")):
            return True
    return False


def deferred_tool(body, name):
    """A tool the client holds back behind its ToolSearch tool (Claude Code names such tools
    in a system reminder and sends no schema until the model asks), by its full name, or
    None when the request offers no ToolSearch or does not name the tool."""
    if tool_named(body, "ToolSearch") is None:
        return None
    pattern = re.compile(r"[A-Za-z0-9_-]*__" + re.escape(name) + r"\b")

    def walk(v):
        if isinstance(v, str):
            found = pattern.search(v)
            return found.group(0) if found else None
        items = v.values() if isinstance(v, dict) else v if isinstance(v, list) else []
        for x in items:
            found = walk(x)
            if found:
                return found
        return None

    return walk(body.get("messages") or body.get("system"))


def tool_named(body, name):
    """The offered tool called `name` (or `<server>__name`), by its full name, or None."""
    for _, n in tool_names(body):
        if n == name or n.endswith("__" + name):
            return n
    return None


def last_results(body):
    """The texts of the tool results in the conversation's last message that is not a
    system note (Anthropic)."""
    messages = [
        m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") != "system"
    ]
    if not messages:
        return []
    out = []
    for block in messages[-1].get("content") or []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            c = block.get("content")
            if isinstance(c, list):
                c = "".join(x.get("text", "") for x in c if isinstance(x, dict))
            out.append(c if isinstance(c, str) else "")
    return out


def compact_turn(body, final):
    """The compaction script's turn for this request (see the module's text)."""
    next_tool = tool_named(body, "compact_next")
    if next_tool is not None:
        results = last_results(body)
        if not results:
            return ("tool", next_tool, {}, None)
        try:
            answer = json.loads(results[-1])
        except ValueError:
            return ("text", "stopped: " + results[-1][:200])
        answer = answer.get("next", answer)
        if answer.get("status") != "job":
            return ("text", "compaction " + str(answer.get("status")))
        lines = [{"line": t, "text": "summary of " + t} for t in answer.get("tasks", [])]
        return ("tool", tool_named(body, "compact_submit"), {"job": answer["job"], "lines": lines}, None)
    agent = tool_named(body, "Agent") or tool_named(body, "Task")
    if agent is None:
        # The subagent with its job tools deferred behind ToolSearch: load them first.
        deferred = [deferred_tool(body, n) for n in ("compact_next", "compact_submit")]
        if deferred[0] is not None and not called(body, "ToolSearch"):
            return ("tool", "ToolSearch", {"query": "select:" + ",".join(d for d in deferred if d)}, None)
        return ("text", "ok")
    if has_tool_result(body):
        return ("text", final)
    args = {
        "subagent_type": "countersign-compactor",
        "description": "Compact the memory",
        "prompt": "Compact the channel's memory.",
        "run_in_background": False,
    }
    return ("tool", agent, args, None)


TASK = re.compile(r"^TASK \d+ of \d+, line ([0-9a-f]{8,64}):", re.M)


def summarize_turn(body):
    """The answer to a compaction job sent without tools: one line per task, in order."""
    text = ""
    for m in body.get("messages") or []:
        c = m.get("content") if isinstance(m, dict) else None
        if isinstance(c, str):
            text += c
        elif isinstance(c, list):
            text += "".join(b.get("text", "") for b in c if isinstance(b, dict))
    lines = [{"line": t, "text": "summary of " + t} for t in TASK.findall(text)]
    return json.dumps(lines) if lines else "ok"


def script_turn(body, script, final):
    """The next call of a scripted sequence ([[tool, arguments], ...]): the first tool of
    the script the conversation has not called yet, each once, in order; where the script's
    tools are deferred behind ToolSearch, one ToolSearch selecting them all comes first.
    Requests that offer none of the script's tools (a title, a summary) get a short text;
    once every tool was called, the final text."""
    pending = [(tool, args) for tool, args in script if not called(body, tool)]
    if not pending:
        return ("text", final)
    tool, args = pending[0]
    offered = tool_named(body, tool)
    if offered is not None:
        return ("tool", offered, args, None)
    deferred = [deferred_tool(body, t) for t, _ in pending]
    if deferred[0] is not None and not called(body, "ToolSearch"):
        return ("tool", "ToolSearch", {"query": "select:" + ",".join(d for d in deferred if d)}, None)
    return ("text", "ok")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "model-api-stand-in/1"

    def log_message(self, *args):  # quiet: the record file is the log
        pass

    # -- plumbing --------------------------------------------------------------------

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {"unparsed": raw.decode("utf-8", "replace")}

    def record(self, body):
        line = json.dumps(
            {"method": self.command, "path": self.path, "body": body, "key": self.headers.get("x-api-key")}
        )
        with LOCK:
            with open(self.server.record, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    def send_json(self, obj, status=200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events):
        """events: (event name or None, data object or string) pairs."""
        chunks = []
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            head = f"event: {name}\n" if name else ""
            chunks.append(f"{head}data: {text}\n\n")
        payload = "".join(chunks).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    # -- routes ----------------------------------------------------------------------

    def do_GET(self):
        self.record(None)
        path = self.path.split("?")[0]
        if path.endswith("/models"):
            self.send_json({"data": [], "object": "list", "has_more": False})
        else:
            self.send_json({"error": {"type": "not_found", "message": path}}, 404)

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        body = self.read_body()
        self.record(body)
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            self.send_json({"input_tokens": 100})
        elif path.endswith("/messages"):
            self.anthropic(body)
        elif path.endswith("/responses"):
            self.openai_responses(body)
        elif path.endswith("/chat/completions"):
            self.openai_chat(body)
        else:
            self.send_json({"error": {"type": "not_found", "message": path}}, 404)

    def turn(self, body):
        """("text", text) or ("tool", name, arguments) for this request."""
        if self.server.compact:
            return compact_turn(body, self.server.final)
        if self.server.script is not None:
            return script_turn(body, self.server.script, self.server.final)
        if called(body, "send_message"):
            return ("text", self.server.final)
        tool = send_tool(body)
        if tool is not None:
            return ("tool", tool[1], self.server.send_args, tool[0])
        # Claude Code's default: the channel's tools are deferred, and the model loads
        # the one it needs through ToolSearch first, as the real model does.
        deferred = deferred_tool(body, "send_message")
        if deferred is not None and not called(body, "ToolSearch"):
            return ("tool", "ToolSearch", {"query": "select:" + deferred}, None)
        return ("text", "ok")

    # -- Anthropic Messages ------------------------------------------------------------

    def scripted_failure(self):
        """The --fail file's object, or None."""
        if not self.server.fail:
            return None
        try:
            with open(self.server.fail, encoding="utf-8") as f:
                v = json.load(f)
        except (OSError, ValueError):
            return None
        return v if isinstance(v, dict) else None

    def anthropic(self, body):
        failure = self.scripted_failure()
        if failure is not None and "status" in failure:
            status = int(failure["status"])
            data = json.dumps(
                {"type": "error", "error": {"type": "scripted", "message": failure.get("message", "scripted failure")}}
            ).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if failure.get("retry_after") is not None:
                self.send_header("retry-after", str(failure["retry_after"]))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if failure is not None and "answer" in failure:
            turn = ("text", str(failure["answer"]))
        elif self.server.summarize:
            turn = ("text", summarize_turn(body))
        else:
            turn = self.turn(body)
        model = body.get("model") or "stand-in"
        usage = {"input_tokens": 100, "output_tokens": 10}
        if turn[0] == "tool":
            block = {"type": "tool_use", "id": next_id("toolu"), "name": turn[1], "input": turn[2]}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": turn[1]}
            stop = "end_turn"
        message = {
            "id": next_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            self.send_json(message)
            return
        start = dict(message, content=[], stop_reason=None)
        if block["type"] == "tool_use":
            opening = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        self.send_sse(
            [
                ("message_start", {"type": "message_start", "message": start}),
                ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": opening}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": 10},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
        )

    # -- OpenAI Responses --------------------------------------------------------------

    def openai_responses(self, body):
        turn = self.turn(body)
        rid = next_id("resp")
        if turn[0] == "tool":
            item = {
                "type": "function_call",
                "id": next_id("fc"),
                "call_id": next_id("call"),
                "name": turn[1],
                "arguments": json.dumps(turn[2]),
                "status": "completed",
            }
            if turn[3]:
                item["namespace"] = turn[3]
        else:
            item = {
                "type": "message",
                "id": next_id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn[1], "annotations": []}],
            }
        usage = {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110,
        }
        response = {"id": rid, "object": "response", "status": "completed", "model": body.get("model")}
        events = [
            ("response.created", {"type": "response.created", "response": dict(response, status="in_progress")}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
        ]
        if item["type"] == "message":
            events.append(
                (
                    "response.output_text.delta",
                    {"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
                     "content_index": 0, "delta": turn[1]},
                )
            )
        events += [
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": dict(response, output=[item], usage=usage)}),
        ]
        self.send_sse(events)

    # -- OpenAI Chat Completions -------------------------------------------------------

    def openai_chat(self, body):
        turn = self.turn(body)
        cid = next_id("chatcmpl")
        if turn[0] == "tool":
            delta = {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": next_id("call"),
                        "type": "function",
                        "function": {"name": turn[1], "arguments": json.dumps(turn[2])},
                    }
                ],
            }
            finish = "tool_calls"
        else:
            delta = {"role": "assistant", "content": turn[1]}
            finish = "stop"
        base = {"id": cid, "object": "chat.completion.chunk", "model": body.get("model")}
        self.send_sse(
            [
                (None, dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}])),
                (None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}])),
                (None, "[DONE]"),
            ]
        )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--record", required=True, help="file to append every request to")
    p.add_argument("--send", default="{}", help="the send_message arguments, a JSON object")
    p.add_argument(
        "--script",
        help="play these tool calls in order instead, a JSON list of [tool, arguments] pairs",
    )
    p.add_argument("--final", default="Done: the message is sent.", help="the final text")
    p.add_argument("--compact", action="store_true", help="play a compaction (see above)")
    p.add_argument("--summarize", action="store_true", help="answer compaction jobs (see above)")
    p.add_argument("--fail", help="a file that, while it exists, scripts the answers (see above)")
    a = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.record = a.record
    server.send_args = json.loads(a.send)
    server.final = a.final
    server.compact = a.compact
    server.summarize = a.summarize
    server.fail = a.fail
    server.script = json.loads(a.script) if a.script else None
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
