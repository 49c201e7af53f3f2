"""The Docker socket proxy: its policy on its own, then the docker backend through it on the real engine."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import docker
import docker.errors
import pytest

from evaluation.sandbox import Environment, Sandbox
from evaluation.sandbox.docker import DockerBackend
from evaluation.sandbox.docker_proxy import Policy, Refused, check, match, parse_head, serve
from evaluation.sandbox.images import default_image

POLICY = Policy(images=("veriharm-sandbox:*",), bind_prefixes=("/var/lib/veriharm/gateway",))
LABELS = {"veriharm.sandbox": "1", "veriharm.kind": "sandbox"}


def sandbox_create(**host_config: object) -> dict:
    """What DockerBackend._start sends (docker-py's JSON), with host_config merged in."""
    host = {
        "NetworkMode": "none",
        "ReadonlyRootfs": True,
        "Tmpfs": {"/tmp": "rw,size=10m"},
        "Binds": ["veriharm-verifier-0123456789abcdef01234567:/.veriharm-verifier:ro"],
        "Memory": 536870912,
        "MemorySwap": 536870912,
        "NanoCpus": 1000000000,
        "PidsLimit": 260,
        "Ulimits": [{"Name": "fsize", "Soft": 1, "Hard": 1}],
        "CapDrop": ["NET_RAW"],
        "SecurityOpt": ["no-new-privileges"],
    }
    host.update(host_config)
    return {
        "Image": "veriharm-sandbox:bookworm",
        "Cmd": ["bash", "-c", "sleep 1"],
        "Entrypoint": [],
        "Labels": dict(LABELS),
        "Hostname": "sandbox",
        "WorkingDir": "/",
        "HostConfig": host,
        "Env": ["HOME=/root"],
        "NetworkDisabled": False,
        "StopSignal": "SIGKILL",
    }


def head(method: str, path: str, *headers: str) -> bytes:
    return "\r\n".join([f"{method} {path} HTTP/1.1", "Host: docker", *headers]).encode()


# ----------------------------------------------------------------------------------- policy


def test_the_backends_own_create_is_allowed() -> None:
    POLICY.check_create(sandbox_create())
    helper = {
        "Image": "veriharm-sandbox:bookworm",
        "Cmd": ["true"],
        "Labels": dict(LABELS),
        "NetworkDisabled": True,
        "HostConfig": {"NetworkMode": "default", "Binds": ["veriharm-verifier-0a1b2c3d4e5f:/veriharm-fill:rw"]},
    }
    POLICY.check_create(helper)
    POLICY.check_create(sandbox_create(Binds=["/var/lib/veriharm/gateway/trial-1:/.veriharm-gateway:ro"]))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"HostConfig": {"Privileged": True}}, "Privileged"),
        ({"HostConfig": {"CapAdd": ["SYS_ADMIN"]}}, "CapAdd"),
        ({"HostConfig": {"NetworkMode": "host"}}, "network mode"),
        ({"HostConfig": {"NetworkMode": "bridge"}}, "network mode"),
        ({"HostConfig": {"PidMode": "host"}}, "PidMode"),
        ({"HostConfig": {"PidMode": "container:"}}, "PidMode"),
        ({"HostConfig": {"PidMode": "container:../x"}}, "PidMode"),
        ({"HostConfig": {"Devices": [{"PathOnHost": "/dev/kmsg"}]}}, "Devices"),
        ({"HostConfig": {"Mounts": [{"Type": "bind", "Source": "/", "Target": "/host"}]}}, "Mounts"),
        ({"HostConfig": {"Binds": ["/:/host"]}}, "outside the allowed"),
        ({"HostConfig": {"Binds": ["/var/run/docker.sock:/var/run/docker.sock:ro"]}}, "outside the allowed"),
        ({"HostConfig": {"Binds": ["/var/lib/veriharm/gateway/x:/g:rw"]}}, "read-only"),
        ({"HostConfig": {"Binds": ["/var/lib/veriharm/gateway/../../..:/g:ro"]}}, "normalised"),
        ({"HostConfig": {"Binds": ["/var/lib/veriharm/gatewayX:/g:ro"]}}, "outside the allowed"),
        ({"HostConfig": {"Binds": ["pgdata:/data"]}}, "not a verifier volume"),
        ({"HostConfig": {"SecurityOpt": ["seccomp=unconfined"]}}, "security option"),
        ({"HostConfig": {"PortBindings": {"80/tcp": [{"HostPort": "80"}]}}}, "PortBindings"),
        ({"HostConfig": {"VolumesFrom": ["web"]}}, "VolumesFrom"),
        ({"Image": "postgres:16"}, "image"),
        ({"Labels": {}}, "labelled"),
        ({"NetworkingConfig": {"EndpointsConfig": {"backend": {}}}}, "network"),
        ({"Volumes": None, "Unknown": "x"}, "Unknown"),
    ],
)
def test_dangerous_creates_are_refused(change: dict, reason: str) -> None:
    body = sandbox_create()
    for key, value in change.items():
        if key == "HostConfig":
            body["HostConfig"].update(value)
        else:
            body[key] = value
    with pytest.raises(Refused, match=reason):
        POLICY.check_create(body)


def test_a_pid_namespace_only_of_a_sandbox() -> None:
    """The snapshot helper joins its sandbox's PID namespace; no other container's can be joined."""
    containers = {"sandbox1": {"Config": {"Labels": dict(LABELS)}}, "postgres": {"Config": {"Labels": {}}}}
    looked_up: list[str] = []

    async def lookup(path: str) -> tuple[int, dict]:
        looked_up.append(path)
        name = path.split("/")[2]
        return (200, containers[name]) if name in containers else (404, {})

    route, groups = match(parse_head(head("POST", "/v1.41/containers/create")))

    def answer(pid_mode: str) -> tuple[int, str] | None:
        body = json.dumps(sandbox_create(PidMode=pid_mode)).encode()
        coroutine = check(POLICY, parse_head(head("POST", "/containers/create")), route, groups, body, lookup)
        # A thread of its own: the browser tests' Playwright session keeps an event loop running in this one.
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, coroutine).result()

    assert answer("container:sandbox1") is None
    assert answer("container:postgres") == (403, "container postgres is not a sandbox")
    assert answer("container:gone") == (404, "No such container: gone")
    assert looked_up == ["/containers/sandbox1/json", "/containers/postgres/json", "/containers/gone/json"]
    status, message = answer("host") or (0, "")
    assert status == 403 and "PidMode" in message


def test_execs_volumes_and_lists() -> None:
    POLICY.check_exec({"AttachStdout": True, "AttachStderr": True, "Cmd": ["sh"], "Privileged": False})
    with pytest.raises(Refused, match="privileged"):
        POLICY.check_exec({"Cmd": ["sh"], "Privileged": True})
    POLICY.check_exec_start({"Detach": False, "Tty": False})
    with pytest.raises(Refused, match="attached"):
        POLICY.check_exec_start({"Detach": True})
    POLICY.check_volume_create({"Name": "veriharm-verifier-0123abcd", "Labels": {"x": "1"}})
    with pytest.raises(Refused, match="options"):
        POLICY.check_volume_create({"Name": "veriharm-verifier-0123abcd", "DriverOpts": {"device": "/"}})
    with pytest.raises(Refused, match="verifier volume"):
        POLICY.check_volume_create({"Name": "pgdata"})
    POLICY.check_list({"all": ["1"], "filters": [json.dumps({"label": ["veriharm.sandbox=1"]})]})
    with pytest.raises(Refused, match="label"):
        POLICY.check_list({"all": ["1"]})
    with pytest.raises(Refused, match="label"):
        POLICY.check_list({"filters": [json.dumps({"label": ["other=1"]})]})


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1.41/images/create?fromImage=alpine"),
        ("POST", "/build"),
        ("POST", "/containers/abc/commit"),
        ("POST", "/commit?container=abc"),
        ("GET", "/containers/abc/logs"),
        ("POST", "/containers/abc/attach"),
        ("POST", "/containers/abc/update"),
        ("GET", "/networks"),
        ("POST", "/networks/backend/connect"),
        ("GET", "/info"),
        ("GET", "/swarm"),
        ("GET", "/secrets"),
        ("POST", "/plugins/pull"),
        ("DELETE", "/images/veriharm-sandbox:bookworm"),
        ("DELETE", "/volumes/veriharm-verifier-0123abcd"),
        ("PUT", "/containers/create"),
    ],
)
def test_calls_the_backend_does_not_need_are_refused(method: str, path: str) -> None:
    with pytest.raises(Refused, match="not an API call"):
        match(parse_head(head(method, path)))


@pytest.mark.parametrize(
    "path",
    [
        "/containers/%2e%2e/json",
        "/v1.41/containers/../images/create",
        "//containers/create",
        "http://x/_ping",
        "/containers/a/./json",
    ],
)
def test_escapes_and_dot_segments_are_refused(path: str) -> None:
    with pytest.raises(Refused):
        match(parse_head(head("GET", path)))


def test_routes_strip_the_api_version() -> None:
    route, groups = match(parse_head(head("POST", "/v1.41/exec/0123abcd/start")))
    assert (route.check, route.body, groups["ref"]) == ("exec", "check_exec_start", "0123abcd")
    route, groups = match(parse_head(head("GET", "/v1.41/images/veriharm-sandbox:bookworm/json")))
    assert (route.check, groups["image"]) == ("image", "veriharm-sandbox:bookworm")


# ------------------------------------------------------------------- on the real engine


@pytest.fixture(scope="module")
def proxy_url(sandbox_base: None) -> Iterator[str]:
    """The proxy on a free local port in a thread of its own, in front of the engine's socket."""
    started = threading.Event()
    port: list[int] = []
    loop = asyncio.new_event_loop()

    def ready(bound: int) -> None:
        port.append(bound)
        started.set()

    task = loop.create_task(serve(Policy(images=("veriharm-sandbox:*",)), "/var/run/docker.sock", "127.0.0.1:0", ready))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    assert started.wait(10), "the proxy did not start"
    yield f"tcp://127.0.0.1:{port[0]}"
    loop.call_soon_threadsafe(task.cancel)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


@pytest.fixture(scope="module")
def proxied(proxy_url: str) -> Iterator[docker.DockerClient]:
    client = docker.DockerClient(base_url=proxy_url, timeout=300)
    yield client
    client.close()


def test_the_docker_backend_works_through_the_proxy(proxied: docker.DockerClient, sandboxes: list[Sandbox]) -> None:
    backend = DockerBackend(client=proxied)
    sandbox = backend.create(Environment(files={"data.txt": "hello\n"}, setup="cat data.txt > copy.txt"))
    sandboxes.append(sandbox)
    result = sandbox.exec("cat copy.txt; echo err >&2; exit 3", 30)
    assert (result.exit_code, result.stdout, result.stderr) == (3, "hello\n", "err\n")
    # Files go in as a tar on the exec's stdin, which ends with a half-close through the proxy.
    sandbox.write_file("written.txt", "w\n")
    assert sandbox.read_file("written.txt") == b"w\n"
    assert sandbox.exec("sleep 30", 1).timed_out
    snapshot = sandbox.snapshot()
    try:
        verdict = snapshot.verify("def test_copy():\n    assert open('/app/copy.txt').read() == 'hello\\n'\n", 60)
        assert verdict.exit_code == 0, verdict
        copy = snapshot.restore()
        sandboxes.append(copy)
        assert copy.read_file("written.txt") == b"w\n"
    finally:
        snapshot.discard()
    assert backend.cleanup_orphans() == 0
    assert "docker image sha256:" in backend.system_identity(Environment())


def test_the_proxy_refuses_what_a_worker_must_not_do(proxied: docker.DockerClient) -> None:
    direct = docker.from_env()
    outsider = direct.containers.create(
        default_image(),
        command=["true"],
        network_disabled=True,
        labels={"veriharm.test": "proxy-outsider"},
        name=f"veriharm-proxy-test-{uuid.uuid4().hex[:8]}",
    )
    try:
        with pytest.raises(docker.errors.APIError, match="is not a sandbox"):
            proxied.containers.get(outsider.id)  # another container's configuration (and its environment)
        with pytest.raises(docker.errors.APIError, match="is not a sandbox"):
            proxied.api.remove_container(outsider.id, force=True)
        with pytest.raises(docker.errors.APIError, match="is not a sandbox"):
            proxied.api.exec_create(outsider.id, ["true"])
    finally:
        outsider.remove(force=True)
        direct.close()
    with pytest.raises(docker.errors.APIError, match="Privileged"):
        proxied.containers.create(
            default_image(), command=["true"], privileged=True, network_mode="none", labels={"veriharm.sandbox": "1"}
        )
    with pytest.raises(docker.errors.APIError, match="outside the allowed"):
        proxied.containers.create(
            default_image(),
            command=["true"],
            network_mode="none",
            labels={"veriharm.sandbox": "1"},
            volumes={"/": {"bind": "/host", "mode": "ro"}},
        )
    with pytest.raises(docker.errors.APIError, match="labelled"):
        proxied.containers.create(default_image(), command=["true"], network_mode="none")
    with pytest.raises(docker.errors.APIError, match="not an API call"):
        proxied.images.pull("alpine", tag="3")
    with pytest.raises(docker.errors.APIError, match="label"):
        proxied.containers.list(all=True)
    with pytest.raises(docker.errors.APIError, match="not an API call"):
        proxied.networks.list()
    with pytest.raises(docker.errors.NotFound):
        proxied.containers.get("veriharm-no-such-container")
