"""The "docker" backend: one container per sandbox, driven through the Docker SDK.

- ``backend``: ``DockerBackend``, which puts the parts below together (create, pools, archives)
- ``container``: a sandbox's container: its layout, its start, commands run in it (``DockerSandbox``)
- ``seeding``: the image's content of the writable directories, read once per image
- ``snapshots``: final-state capture from outside the sandbox, restore, export (``DockerSnapshot``)
- ``verification``: the test phase's container, the agent's state and the test module in one exec
- ``volumes``: the verifier runtime's volume
- ``orphans``: which containers and snapshot files this process owns; the sweep after a crash
"""

from .backend import DockerBackend
from .container import DockerSandbox
from .snapshots import DockerSnapshot

__all__ = ["DockerBackend", "DockerSandbox", "DockerSnapshot"]
