"""What the sandbox workers may ask of the Docker engine: the containers, execs and volumes they
create (``Policy``), and the refusal of anything else (``Refused``, answered 403)."""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
from dataclasses import dataclass

SANDBOX_LABEL = "veriharm.sandbox"  # evaluation.sandbox.environment.SANDBOX_LABEL (not imported: stdlib only)
VERIFIER_VOLUME = re.compile(r"veriharm-verifier-[0-9a-f]{8,64}")
# Container and exec references: ids, id prefixes, names.
REF_CHARS = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}"
REF = rf"(?P<ref>{REF_CHARS})"
IMAGE_NAME = r"(?P<image>[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,255})"

# HostConfig keys the backend sets (evaluation/sandbox/docker/container.py); any other must be unset/empty.
HOST_CONFIG_ALLOWED = {
    "Binds",
    "Tmpfs",
    "NetworkMode",
    "Memory",
    "MemorySwap",
    "NanoCpus",
    "PidsLimit",
    "Ulimits",
    "CapDrop",
    "SecurityOpt",
    "ReadonlyRootfs",
    "LogConfig",
    "AutoRemove",
    "ShmSize",
    "OomScoreAdj",
    "PidMode",
}
# A snapshot helper joins the PID namespace of the sandbox it reads (evaluation.sandbox.docker.snapshots.snapshot_helper).
PID_MODE = re.compile(rf"container:(?P<ref>{REF_CHARS})")
# Config keys of a container create; NetworkingConfig is checked on its own, any other must be empty.
CONFIG_ALLOWED = {
    "Image",
    "Cmd",
    "Entrypoint",
    "Env",
    "Labels",
    "Hostname",
    "Domainname",
    "WorkingDir",
    "User",
    "AttachStdin",
    "AttachStdout",
    "AttachStderr",
    "Tty",
    "OpenStdin",
    "StdinOnce",
    "NetworkDisabled",
    "StopSignal",
    "StopTimeout",
    "Volumes",
    "HostConfig",
    "NetworkingConfig",
    "Healthcheck",
    "ExposedPorts",
    "MacAddress",
    "Shell",
    "ArgsEscaped",
    "OnBuild",
}
SECURITY_OPTS_ALLOWED = {"no-new-privileges", "no-new-privileges:true", "no-new-privileges=true"}
EXEC_ALLOWED = {
    "AttachStdin",
    "AttachStdout",
    "AttachStderr",
    "Tty",
    "Cmd",
    "Env",
    "WorkingDir",
    "User",
    "Privileged",
    "DetachKeys",
    "ConsoleSize",
    "Container",
}


class Refused(Exception):
    """A request the policy does not allow (answered 403 with this message)."""


@dataclass(frozen=True)
class Policy:
    images: tuple[str, ...] = ("veriharm-sandbox:*",)
    bind_prefixes: tuple[str, ...] = ()

    def image_allowed(self, image: str) -> bool:
        return any(fnmatch.fnmatchcase(image, pattern) for pattern in self.images)

    def check_image(self, image: object) -> None:
        if not isinstance(image, str) or not self.image_allowed(image):
            raise Refused(f"image {image!r} is not one the sandboxes may use ({', '.join(self.images)})")

    def check_bind(self, bind: object) -> None:
        if not isinstance(bind, str):
            raise Refused(f"bind {bind!r} is not a string")
        parts = bind.split(":")
        if len(parts) not in (2, 3):
            raise Refused(f"bind {bind!r} is not source:target[:mode]")
        source, _target, mode = parts[0], parts[1], parts[2] if len(parts) == 3 else "rw"
        if VERIFIER_VOLUME.fullmatch(source):
            return
        if not source.startswith("/"):
            raise Refused(f"volume {source!r} is not a verifier volume")
        if posixpath.normpath(source) != source or "//" in source:
            raise Refused(f"bind source {source!r} is not a normalised path")
        if not any(source == prefix or source.startswith(prefix.rstrip("/") + "/") for prefix in self.bind_prefixes):
            raise Refused(f"host path {source!r} is outside the allowed bind prefixes")
        if "ro" not in mode.split(","):
            raise Refused(f"host path {source!r} may only be bound read-only")

    def check_create(self, body: object) -> None:
        if not isinstance(body, dict):
            raise Refused("container create body is not a JSON object")
        for key, value in body.items():
            if key not in CONFIG_ALLOWED and value not in (None, "", [], {}, False, 0):
                raise Refused(f"container option {key} is not allowed")
        self.check_image(body.get("Image"))
        labels = body.get("Labels") or {}
        if not isinstance(labels, dict) or labels.get(SANDBOX_LABEL) != "1":
            raise Refused(f"containers must be labelled {SANDBOX_LABEL}=1")
        endpoints = (
            (body.get("NetworkingConfig") or {}).get("EndpointsConfig")
            if isinstance(body.get("NetworkingConfig") or {}, dict)
            else True
        )
        if endpoints:
            raise Refused("containers may not be attached to a network")
        host = body.get("HostConfig") or {}
        if not isinstance(host, dict):
            raise Refused("HostConfig is not a JSON object")
        for key, value in host.items():
            if key not in HOST_CONFIG_ALLOWED and value not in (None, "", [], {}, False, 0):
                raise Refused(f"host option {key}={value!r} is not allowed")
        mode = host.get("NetworkMode") or ""
        if mode != "none" and not (mode in ("", "default") and body.get("NetworkDisabled") is True):
            raise Refused(f"network mode {mode!r} is not allowed (only none)")
        pid_mode = host.get("PidMode")
        if pid_mode and not (isinstance(pid_mode, str) and PID_MODE.fullmatch(pid_mode)):
            raise Refused(f"PidMode {pid_mode!r} is not allowed (only container:<a sandbox>)")
        for option in host.get("SecurityOpt") or []:
            if option not in SECURITY_OPTS_ALLOWED:
                raise Refused(f"security option {option!r} is not allowed")
        for bind in host.get("Binds") or []:
            self.check_bind(bind)

    def check_exec(self, body: object) -> None:
        if not isinstance(body, dict):
            raise Refused("exec body is not a JSON object")
        for key, value in body.items():
            if key not in EXEC_ALLOWED and value not in (None, "", [], {}, False, 0):
                raise Refused(f"exec option {key} is not allowed")
        if body.get("Privileged"):
            raise Refused("privileged execs are not allowed")

    def check_exec_start(self, body: object) -> None:
        if not isinstance(body, dict) or body.get("Detach"):
            raise Refused("execs must be started attached")

    def check_volume_create(self, body: object) -> None:
        if not isinstance(body, dict):
            raise Refused("volume create body is not a JSON object")
        name = body.get("Name")
        if not isinstance(name, str) or not VERIFIER_VOLUME.fullmatch(name):
            raise Refused(f"volume {name!r} is not a verifier volume")
        if body.get("Driver") not in (None, "", "local") or body.get("DriverOpts"):
            raise Refused("volumes must use the local driver without options")

    @staticmethod
    def check_list(query: dict[str, list[str]]) -> None:
        try:
            filters = json.loads(query.get("filters", ["{}"])[-1])
        except ValueError as exc:
            raise Refused("unreadable filters") from exc
        labels = filters.get("label") if isinstance(filters, dict) else None
        wanted = f"{SANDBOX_LABEL}=1"
        if not (
            labels == [wanted]
            or (isinstance(labels, list) and wanted in labels)
            or (isinstance(labels, dict) and labels.get(wanted) is True)
        ):
            raise Refused(f"container lists must filter on the label {wanted}")
