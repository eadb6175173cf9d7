#!/usr/bin/env python3
"""A minimal MCP server for the tests of package mcp: JSON-RPC 2.0 over stdio, one JSON message
per line, standard library only.

Tools: echo (text back, with the process id as structured content), fail (an isError result),
slow (sleeps), crash (the process exits without answering), and whoami (the MCP_TOKEN
environment variable, to check secrets reach the process).

Switches: --with-inspect adds the tool "inspect" (the process's working directory, environment and
open file descriptors, to check what a server inherits). --late-tool SECONDS adds the tool "late_tool" and removes "fail" that many seconds
after initialisation, and sends notifications/tools/list_changed (unless --silent).
"""
import json
import os
import sys
import threading
import time

LATEST = "2025-11-25"
KNOWN = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

out_lock = threading.Lock()
tools = {
    "echo": {
        "name": "echo",
        "description": "Echoes the text back.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "What to echo."}},
            "required": ["text"],
            "additionalProperties": False,
        },
    },
    "fail": {
        "name": "fail",
        "description": "Always fails as a tool.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    "slow": {
        "name": "slow",
        "description": "Sleeps for the given seconds.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
    },
    "crash": {
        "name": "crash",
        "description": "Exits the server process.",
        "inputSchema": {"type": "object"},
    },
    "whoami": {
        "name": "whoami",
        "description": "Returns the MCP_TOKEN environment variable.",
        "inputSchema": {"type": "object"},
    },
}


def send(msg):
    with out_lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def result(rid, res):
    send({"jsonrpc": "2.0", "id": rid, "result": res})


def error(rid, code, message):
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def text(s, is_error=False, structured=None):
    res = {"content": [{"type": "text", "text": s}]}
    if is_error:
        res["isError"] = True
    if structured is not None:
        res["structuredContent"] = structured
    return res


def call_tool(rid, params):
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "echo":
        t = args.get("text")
        if not isinstance(t, str):
            result(rid, text("text must be a string", is_error=True))
            return
        result(rid, text(t, structured={"echo": t, "pid": os.getpid()}))
    elif name == "fail" and name in tools:
        result(rid, text("this tool always fails", is_error=True))
    elif name == "slow":
        time.sleep(float(args.get("seconds", 5)))
        result(rid, text("slept"))
    elif name == "crash":
        sys.stdout.flush()
        os._exit(3)
    elif name == "whoami":
        result(rid, text(os.environ.get("MCP_TOKEN", "")))
    elif name == "late_tool" and name in tools:
        result(rid, text("late"))
    elif name == "inspect" and name in tools:
        fds = {}
        for fd in os.listdir("/proc/self/fd"):
            try:
                fds[fd] = os.readlink("/proc/self/fd/" + fd)
            except OSError:
                pass  # the descriptor listdir itself used, closed by now
        info = {"cwd": os.getcwd(), "env": dict(os.environ), "fds": fds}
        result(rid, text(json.dumps(info), structured=info))
    elif name == "search" and name in tools:
        q = str(args.get("q", ""))
        hits = [{"type": "doc", "id": "doc-" + q, "title": "Notes on " + q, "url": "/docs/" + q, "score": 0.7}]
        result(rid, text(json.dumps({"hits": hits}), structured={"hits": hits}))
    else:
        error(rid, -32602, "unknown tool: %s" % name)


def add_late_tool(delay, silent):
    time.sleep(delay)
    tools.pop("fail", None)
    tools["late_tool"] = {
        "name": "late_tool",
        "description": "Appears after a while.",
        "inputSchema": {"type": "object", "properties": {}},
    }
    if not silent:
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


argv = sys.argv[1:]

if "--with-inspect" in argv:
    tools["inspect"] = {
        "name": "inspect",
        "description": "Reports the working directory, environment and open descriptors.",
        "inputSchema": {"type": "object"},
    }

if "--with-search" in argv:  # a palette search provider: {q, limit} -> {hits: [...]}
    tools["search"] = {
        "name": "search",
        "description": "Searches the notes.",
        "inputSchema": {
            "type": "object",
            "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["q"],
        },
    }


def main():
    late = None
    if "--late-tool" in argv:
        late = float(argv[argv.index("--late-tool") + 1])
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            error(None, -32700, "parse error")
            continue
        method = msg.get("method")
        rid = msg.get("id")
        params = msg.get("params") or {}
        if method is None:
            continue  # a response to nothing we asked
        if rid is None:
            continue  # notifications: initialized, cancelled
        if method == "initialize":
            requested = params.get("protocolVersion")
            version = requested if requested in KNOWN else LATEST
            result(rid, {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "pytest-server", "version": "1.0.0"},
            })
            if late is not None:
                threading.Thread(target=add_late_tool, args=(late, "--silent" in argv), daemon=True).start()
        elif method == "ping":
            result(rid, {})
        elif method == "tools/list":
            result(rid, {"tools": list(tools.values())})
        elif method == "tools/call":
            # Calls run on their own thread so a slow call does not block pings or other calls.
            threading.Thread(target=call_tool, args=(rid, params), daemon=True).start()
        else:
            error(rid, -32601, "method not found: %s" % method)


if __name__ == "__main__":
    main()
