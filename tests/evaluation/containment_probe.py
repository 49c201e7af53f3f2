"""The containment probe: what an agent inside a sandbox tries, and the host's reading of what it found.

One script, run inside the sandbox as one shell command (by a test's own exec, or by a native
harness's shell tool when its scripted model asks for it), tries what a hostile agent would: the
host's PostgreSQL, Redis and a web server on every host address, the outside world and DNS; it reads
the routing table; it looks for the real key in every process's environment and command line and in
every writable place; optionally it asks the trial's gateway what it serves and does not, lists the
processes it sees, and leaves a process behind in a new session. It prints its findings on one line
after ``PROBE ``; the host reads them back with ``findings`` and holds them to ``assert_contained``.

Shared by tests/evaluation/sandbox/test_model_mode.py (in a sandbox the test makes) and
tests/evaluation/test_native_harness_containment.py (by each native harness's own shell tool).
"""

from __future__ import annotations

import base64
import json
import secrets
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import docker
import docker.errors

# What the probe's line of findings starts with, in a command's output or a transcript step.
PROBE_MARK = "PROBE "

_SCRIPT = r"""
import glob, http.client, json, os, socket, subprocess
args = json.loads(ARGS)
# Given hex-encoded, so that nothing in the probe's own command line holds what it looks for.
key = bytes.fromhex(args["key"])
out = {"reached": [], "routes": open("/proc/net/route").read().splitlines()[1:], "key_found": []}
for host, port in args["targets"]:
    try:
        socket.create_connection((host, port), timeout=2).close()
        out["reached"].append(f"{host}:{port}")
    except OSError:
        pass
try:
    socket.getaddrinfo("deb.debian.org", 443)
    out["reached"].append("dns")
except OSError:
    pass
if args.get("gateway_port"):
    out["gateway"] = {}
    body = json.dumps({"model": "scripted-1", "messages": [{"role": "user", "content": "hi"}]})
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
    def ask(name, method, target, extra=None):
        connection = http.client.HTTPConnection("127.0.0.1", args["gateway_port"], timeout=30)
        try:
            connection.request(method, target, body=body, headers={**headers, **(extra or {})})
            answer = connection.getresponse()
            out["gateway"][name] = [answer.status, answer.read().decode("utf-8", "replace")]
        except OSError as exc:
            out["gateway"][name] = [0, str(exc)]
    ask("chat", "POST", "/v1/chat/completions")
    ask("models", "GET", "/v1/models")
    ask("embeddings", "POST", "/v1/embeddings")
    ask("other_host", "POST", "/v1/chat/completions", {"Host": "api.openai.com"})
    ask("absolute", "POST", "http://api.openai.com/v1/chat/completions")
for path in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
    try:
        if key in open(path, "rb").read():
            out["key_found"].append(path)
    except OSError:
        pass
if args.get("list_processes"):
    out["processes"] = []
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            out["processes"].append(open(path, "rb").read().replace(b"\0", b" ").decode("utf-8", "replace"))
        except OSError:
            pass
for top in args["dirs"]:
    for root, _, files in os.walk(top):
        for name in files:
            path = os.path.join(root, name)
            try:
                if os.path.isfile(path) and key in open(path, "rb").read():
                    out["key_found"].append(path)
            except OSError:
                pass
out["home"] = os.environ.get("HOME", "")
if args.get("linger"):
    subprocess.Popen(["sleep", args["linger"]], start_new_session=True, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
print("PROBE " + json.dumps(out))
"""


def probe_command(
    *,
    targets: list[tuple[str, int]],
    key: str,
    dirs: list[str],
    gateway_port: int | None = None,
    list_processes: bool = False,
    linger: str | None = None,
) -> str:
    """The probe as one shell command: try `targets`, look for `key` in every process and under
    `dirs`; ask the gateway on `gateway_port` (with the dummy key of the OpenAI dialect's
    environment), list the processes, and leave `sleep <linger>` running, when asked.

    One command without quotes, heredocs or `$(...)` (Gemini CLI refuses command substitution), and
    with nothing in it that the probe looks for: the key travels hex-encoded inside the encoded script.
    """
    args = {
        "targets": targets,
        "key": key.encode().hex(),
        "dirs": dirs,
        "gateway_port": gateway_port,
        "list_processes": list_processes,
        "linger": linger,
    }
    script = _SCRIPT.replace("ARGS", repr(json.dumps(args)))
    return f"echo {base64.b64encode(script.encode()).decode()} | base64 -d | python3 -"


def findings(output: str) -> dict[str, Any]:
    """What the probe found, read from the output (or transcript step) that holds its line."""
    assert PROBE_MARK + "{" in output, output[-2000:]
    return json.loads(output.split(PROBE_MARK, 1)[1].splitlines()[0])


def assert_contained(seen: dict[str, Any], where: str) -> None:
    """Nothing reached (no host service, no outside address, no DNS), no route, the key nowhere."""
    assert seen["reached"] == [], (where, seen["reached"])
    assert seen["routes"] == [], (where, seen["routes"])  # no route at all: loopback only
    assert seen["key_found"] == [], (where, seen["key_found"])


def host_addresses() -> list[str]:
    """The host's non-loopback IPv4 addresses and, when the engine has one, Docker's bridge gateway."""
    listed = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=True).stdout
    addresses = [line.split()[3].split("/")[0] for line in listed.splitlines() if line.split()[1] != "lo"]
    try:
        bridge = docker.from_env().networks.get("bridge").attrs["IPAM"]["Config"][0]["Gateway"]
        addresses.append(bridge)
    except (docker.errors.DockerException, KeyError, IndexError):
        pass  # this engine runs without a bridge network (--bridge=none): no such address to try
    assert addresses, "the host has no non-loopback address to probe"
    return sorted(set(addresses))


def probe_targets(web_port: int) -> list[tuple[str, int]]:
    """The host's PostgreSQL, Redis and web server on loopback, the outside world, and the web
    server, PostgreSQL, Redis and SSH on every other host address; after checking that from the
    host itself the database, Redis and the web server (on every address) do answer."""
    addresses = host_addresses()
    for host, port in [("127.0.0.1", 5432), ("127.0.0.1", 6379), ("127.0.0.1", web_port)] + [
        (address, web_port) for address in addresses
    ]:
        socket.create_connection((host, port), timeout=2).close()
    targets = [("127.0.0.1", 5432), ("127.0.0.1", 6379), ("127.0.0.1", web_port), ("1.1.1.1", 53), ("1.1.1.1", 443)]
    return targets + [(address, port) for address in addresses for port in (web_port, 5432, 6379, 22)]


def linger_marker() -> str:
    """A sleep length nothing else asks for: any process left running with it is the probe's."""
    return f"{7000 + secrets.randbelow(2000)}.{secrets.randbelow(10**6)}"


def lingering(marker: str) -> list[str]:
    """The host's processes still sleeping for `marker`."""
    found = subprocess.run(["pgrep", "-af", f"sleep {marker}"], capture_output=True, text=True).stdout
    return [line for line in found.splitlines() if "pgrep" not in line]


class _Web(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"web")

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def web_server() -> Iterator[int]:
    """A web server on the host, on every address (as `runserver 0.0.0.0` would be); yields its port."""
    server = ThreadingHTTPServer(("0.0.0.0", 0), _Web)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
