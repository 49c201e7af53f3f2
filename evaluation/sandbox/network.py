"""Network modes of a sandbox: ``none`` and ``model``. No sandbox ever shares the host's network.

* ``none``: the sandbox's own network namespace with loopback only (bubblewrap
  ``--unshare-net``, Docker ``network_mode="none"``). Nothing outside answers.
* ``model``: the same namespace, so still no route anywhere, plus the trial's model
  gateway (``evaluation.gateway``). The gateway's Unix socket is bound into the
  sandbox read-only at ``GATEWAY_MOUNT``, and every ``exec`` of the sandbox starts
  with a small forwarder (``FORWARDER_SOURCE``) that listens on
  ``127.0.0.1:MODEL_PORT`` inside the sandbox's namespace and copies bytes between
  each TCP connection and the socket. A harness is told ``MODEL_BASE_URL`` and a
  dummy key; the gateway swaps in the real key in the worker, serves only its one
  upstream's routes and refuses every other host. The forwarder holds no secret and
  enforces nothing (the agent could talk to the socket itself): it only turns the
  socket into an ordinary HTTP base URL. It is a child of the exec's own command, so
  it dies with the exec like every other process (``base`` module docstring).

A harness's read-only runtime (``scripts/build_sandbox_image.sh``), when the
agent has one, is mounted at ``HARNESS_MOUNT`` in ``model`` mode only.

The host side (where the socket and the runtime come from) is ``ModelAccess``;
each backend decides how to make them visible (``docker.container``, ``bubblewrap.tree``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

NONE = "none"
MODEL = "model"
MODES = (NONE, MODEL)

# Inside every model-mode sandbox: the gateway's socket directory, the harness
# runtime, and where the forwarder listens. One sandbox per network namespace, so a
# fixed port never collides.
GATEWAY_MOUNT = "/.veriharm-gateway"
GATEWAY_SOCKET = f"{GATEWAY_MOUNT}/model.sock"
HARNESS_MOUNT = "/.veriharm-harness"
MODEL_PORT = 8370
MODEL_ORIGIN = f"http://127.0.0.1:{MODEL_PORT}"
# OpenAI-style clients take the API root with its version; Anthropic's SDK adds /v1 itself.
MODEL_BASE_URL = f"{MODEL_ORIGIN}/v1"
# What a harness sends as its key: the gateway replaces whatever arrives with the real one.
DUMMY_KEY = "veriharm-dummy-key"
# The sandbox system's own interpreter (read-only /usr), isolated from PYTHON* variables
# and site directories, so nothing in the writable /usr/local changes how it starts.
FORWARDER_PYTHON = "/usr/bin/python3"

HOST_NETWORK_REFUSED = (
    "sandboxes never share the host's network (it would reach the database, Redis, the web server and "
    "anything else the host can); the network modes are 'none' (loopback only) and 'model' (loopback plus "
    "the trial's model gateway): see docs/harnesses.md"
)

# Binds 127.0.0.1:port before anything else runs (so the command never races it),
# forks a child that serves connections, and replaces itself with the command: the
# command keeps the exec's pid, status and signals, and the forwarder is its child.
FORWARDER_SOURCE = r"""
import os, socket, sys, threading, time
port, path, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(64)
if os.fork():
    listener.close()
    os.execv(argv[0], argv)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)

def pipe(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    try:
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass

def serve(client):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=pipe, args=(upstream, client), daemon=True)
    back.start()
    pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()

while True:
    try:
        client, _ = listener.accept()
    except OSError:  # e.g. out of descriptors: wait rather than spin
        time.sleep(0.05)
        continue
    threading.Thread(target=serve, args=(client,), daemon=True).start()
"""


def forwarder_argv(argv: list[str]) -> list[str]:
    """``argv`` run with the model forwarder listening beside it for as long as it runs."""
    return [FORWARDER_PYTHON, "-I", "-S", "-c", FORWARDER_SOURCE, str(MODEL_PORT), GATEWAY_SOCKET, *argv]


@dataclass(frozen=True)
class ModelAccess:
    """What a ``model``-mode sandbox gets from the host: the trial gateway's private socket
    directory (holding ``model.sock``) and, for a harness agent, its read-only runtime."""

    socket_dir: Path
    harness_root: Path | None = None

    @property
    def socket_path(self) -> Path:
        return self.socket_dir / Path(GATEWAY_SOCKET).name


def harness_env(api: str) -> dict[str, str]:
    """The environment pointing a harness at the gateway: generic names and the SDKs' own."""
    env = {"VERIHARM_MODEL_BASE_URL": MODEL_BASE_URL, "VERIHARM_MODEL_API_KEY": DUMMY_KEY}
    if api == "anthropic":
        env |= {"ANTHROPIC_BASE_URL": MODEL_ORIGIN, "ANTHROPIC_API_KEY": DUMMY_KEY}
    elif api == "gemini":
        # Google's clients take the API's root and add /v1beta themselves, as the gateway expects.
        env |= {"GOOGLE_GEMINI_BASE_URL": MODEL_ORIGIN, "GEMINI_API_KEY": DUMMY_KEY}
    else:
        env |= {"OPENAI_BASE_URL": MODEL_BASE_URL, "OPENAI_API_BASE": MODEL_BASE_URL, "OPENAI_API_KEY": DUMMY_KEY}
    return env
