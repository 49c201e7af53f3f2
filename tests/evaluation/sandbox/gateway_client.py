"""A client of the trial's model gateway that runs inside a sandbox, as an agent's own code would.

`CLIENT` is a script for the sandbox tree's python3 with only the standard library: http.client over
the gateway's Unix socket for ordinary calls, raw sockets for what a normal client cannot send. It
runs a list of actions and writes everything it received to `RECEIVED` inside the sandbox (and to
its stdout), so the test can search what the sandbox really got.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from evaluation.sandbox import Sandbox
from evaluation.sandbox.network import GATEWAY_SOCKET

RECEIVED = "/tmp/received.json"

CLIENT = r"""
import base64, http.client, json, select, socket, sys, time
with open(sys.argv[1]) as given:
    args = json.load(given)
PATH = args["socket"]

def unix(timeout=60):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # Connected blocking: with a timeout set, a full listen backlog fails at once (EAGAIN) instead of waiting.
    sock.connect(PATH)
    sock.settimeout(timeout)
    return sock

class UnixConnection(http.client.HTTPConnection):
    def __init__(self):
        super().__init__("gateway", timeout=60)
    def connect(self):
        self.sock = self.raw = unix(self.timeout)

HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer dummy"}

def read_all(sock):
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        data += chunk
    return data

def status_of(data):
    head, _, body = data.partition(b"\r\n\r\n")
    parts = head.split()
    return (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0), head.decode("latin-1"), body.decode("utf-8", "replace")

def call(action):
    connection = UnixConnection()
    try:
        connection.request("POST", action.get("path", "/v1/chat/completions"), body=json.dumps(action["body"]), headers=HEADERS)
        answer = connection.getresponse()
        return {"status": answer.status, "headers": str(answer.getheaders()), "body": answer.read().decode("utf-8", "replace")}
    finally:
        connection.close()

def raw(action):
    with unix(30) as sock:
        sock.sendall(base64.b64decode(action["data"]))
        status, head, body = status_of(read_all(sock))
    return {"status": status, "headers": head, "body": body}

def abandon(action):
    # Reads a few events of a streamed answer, then goes away without reading the rest.
    connection = UnixConnection()
    connection.request("POST", "/v1/chat/completions", body=json.dumps(action["body"]), headers=HEADERS)
    answer = connection.getresponse()
    lines = [answer.readline().decode("utf-8", "replace") for _ in range(action["lines"])]
    connection.raw.shutdown(socket.SHUT_RDWR)
    connection.raw.close()
    return {"status": answer.status, "headers": str(answer.getheaders()), "body": "".join(lines)}

def idle(action):
    # Opens many connections and sends nothing on them; those past the gateway's cap are answered at once.
    socks = [unix(30) for _ in range(action["count"])]
    refused, answers = action["count"] - action["cap"], {}
    poller = select.poll()
    for sock in socks:
        poller.register(sock, select.POLLIN)
    by_fd = {sock.fileno(): sock for sock in socks}
    deadline = time.monotonic() + 60
    while len(answers) < refused and time.monotonic() < deadline:
        for fd, _ in poller.poll(1000):
            if fd not in answers:
                answers[fd] = read_all(by_fd[fd])
                poller.unregister(fd)
    time.sleep(action["hold"])  # the admitted connections stay open, idle, while the host counts threads
    for sock in socks:
        sock.close()
    return {"opened": len(socks), "answered": [a.decode("utf-8", "replace") for a in answers.values()]}

def oversized(action):
    # Declares a body over the limit; sends none of it, or keeps sending until the gateway hangs up.
    for attempt in range(1, 101):
        sent = 0
        with unix(30) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % action["length"])
            if action["send_body"]:
                chunk = b" " * (1 << 20)
                try:
                    while sent < action["length"]:
                        sent += sock.send(chunk[: action["length"] - sent])
                except OSError:
                    pass  # refused on its Content-Length: the gateway stopped reading
            # The whole answer: its head and body may come in separate writes.
            data = read_all(sock)
        status, head, body = status_of(data)
        if status != 503:  # 503: the idle connections' slots are not all free yet
            return {"status": status, "headers": head, "body": body, "sent": sent, "attempts": attempt}
        time.sleep(0.2)
    return {"status": 503, "headers": "", "body": "every attempt found the connections full", "sent": sent, "attempts": attempt}

ACTIONS = {"call": call, "raw": raw, "abandon": abandon, "idle": idle, "oversized": oversized}
results = []
for action in args["actions"]:
    try:
        results.append(ACTIONS[action["do"]](action))
    except OSError as exc:
        results.append({"status": 0, "headers": "", "body": f"{type(exc).__name__}: {exc}"})
out = json.dumps(results)
with open(args["received"], "w") as received:
    received.write(out)
print(out)
"""


def raw_action(request: bytes) -> dict[str, Any]:
    return {"do": "raw", "data": base64.b64encode(request).decode()}


def run_client(
    sandbox: Sandbox, actions: list[dict[str, Any]], timeout: float = 180
) -> tuple[list[dict[str, Any]], str]:
    """The client's answers to `actions`, and the text it wrote inside the sandbox."""
    sandbox.write_file("/tmp/gateway_client.py", CLIENT)
    # The actions go in a file: raw requests hold bytes no command line should carry.
    sandbox.write_file(
        "/tmp/gateway_actions.json", json.dumps({"socket": GATEWAY_SOCKET, "received": RECEIVED, "actions": actions})
    )
    result = sandbox.exec("python3 /tmp/gateway_client.py /tmp/gateway_actions.json", timeout)
    assert result.exit_code == 0, result
    received = sandbox.read_file(RECEIVED).decode()
    return json.loads(received), received
