"""Seeding: the image's content of a sandbox's writable directories.

A tmpfs starts empty, so at create the image's content of those directories is copied in: read
once per image from a created-never-started helper container (``get_archive``), cached, and
unpacked by ``tar`` inside.
"""

from __future__ import annotations

import io
import tarfile
import threading
from typing import Any

import docker
import docker.errors

from ..environment import SandboxError
from .container import DOCKER_MANAGED, ContainerSpec
from .orphans import container_id_of, creating, remove_container

SeedKey = tuple[str, tuple[str, ...]]
Seed = tuple[bytes, dict[str, int]]


class ImageSeeds:
    """The seed tars of the images a backend runs, read once per image id and writable dirs."""

    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client
        self._seeds: dict[SeedKey, Seed] = {}
        self._seed_lock = threading.Lock()

    def image_id(self, image: str) -> str:
        try:
            return str(self.client.images.get(image).id)
        except docker.errors.ImageNotFound as exc:
            raise SandboxError(
                f"docker image {image!r} not found (no registry is used; build the default one with "
                "scripts/build_sandbox_image.sh)"
            ) from exc
        except docker.errors.DockerException as exc:
            raise SandboxError(f"docker engine error: {exc}") from exc

    def seed(self, spec: ContainerSpec) -> Seed:
        """One tar (paths relative to /) of the image's content of the writable dirs, and
        the bytes it holds per mount; cached per image."""
        return self.seed_with_key(spec)[1]

    def seed_with_key(self, spec: ContainerSpec) -> tuple[SeedKey, Seed]:
        """``seed``, with the key it is cached under: the image's id and the writable dirs."""
        key = (self.image_id(spec.image), spec.mounts)
        with self._seed_lock:
            if key not in self._seeds:
                self._seeds[key] = self._read_image_dirs(spec.image, spec.mounts)
            return key, self._seeds[key]

    def cached(self, key: SeedKey) -> Seed:
        """The seed ``seed_with_key`` read for ``key``."""
        with self._seed_lock:
            return self._seeds[key]

    def _read_image_dirs(self, image: str, mounts: tuple[str, ...]) -> tuple[bytes, dict[str, int]]:
        with creating("helper") as labels:
            return self._read_image_dirs_with(image, mounts, labels)

    def _read_image_dirs_with(
        self, image: str, mounts: tuple[str, ...], labels: dict[str, str]
    ) -> tuple[bytes, dict[str, int]]:
        try:
            helper = self.client.containers.create(image, command=["true"], network_disabled=True, labels=labels)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot create a helper container from {image}: {exc}") from exc
        output = io.BytesIO()
        sizes: dict[str, int] = {}
        try:
            with tarfile.open(fileobj=output, mode="w", format=tarfile.PAX_FORMAT) as combined:
                for mount in mounts:
                    try:
                        chunks, _ = helper.get_archive(mount)
                    except docker.errors.NotFound:
                        continue  # the image lacks it: the tmpfs starts empty
                    # get_archive names members after the basename ("local/..." for
                    # /usr/local); rename them relative to "/" so one tar -C / fits all.
                    prefix = mount.lstrip("/").rsplit("/", 1)[0] + "/" if mount.count("/") > 1 else ""
                    with tarfile.open(fileobj=ChunkReader(chunks), mode="r|") as part:
                        for member in part:
                            member.name = prefix + member.name
                            if member.name in DOCKER_MANAGED:
                                continue
                            if member.islnk():
                                member.linkname = prefix + member.linkname
                            # tmpfs rounds every file up to whole pages.
                            sizes[mount] = sizes.get(mount, 0) + (member.size + 4095) // 4096 * 4096 + 4096
                            combined.addfile(member, part.extractfile(member) if member.isfile() else None)
        except docker.errors.DockerException as exc:
            raise SandboxError(f"cannot read {image}'s filesystem: {exc}") from exc
        finally:
            remove_container(self.client, container_id_of(helper))
        return output.getvalue(), sizes


class ChunkReader(io.RawIOBase):
    """A file-like view of the byte chunks get_archive yields, for tarfile's stream mode."""

    def __init__(self, chunks: Any) -> None:
        self._chunks = iter(chunks)
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        while not self._buffer:
            try:
                self._buffer = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(target), len(self._buffer))
        target[:size] = self._buffer[:size]
        self._buffer = self._buffer[size:]
        return size
