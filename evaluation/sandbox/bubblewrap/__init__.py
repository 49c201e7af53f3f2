"""The "local" backend: bubblewrap sandboxes on the host, no daemon.

- ``backend``: ``BubblewrapBackend``, which puts the parts below together (create, pools, archives)
- ``tree``: a sandbox: its bwrap command line, its limits, commands run in it (``LocalSandbox``)
- ``seeding``: its writable tree filled from the system tree, a snapshot's copy, or left empty
- ``snapshots``: final-state capture, the test phase's copy, export (``LocalSnapshot``)
- ``runtime``: the host's checks, the system tree and the verifier runtime where the sandbox uids reach them
- ``cgroups``: the per-sandbox cgroups (v1), and the prlimit fallback's overhead
- ``host``: commands, mounts and ownership on the host; the processes of a sandbox's uid
- ``orphans``: which directories this process owns, their teardown, the sweep after a crash
"""

from .backend import BubblewrapBackend
from .snapshots import LocalSnapshot
from .tree import LocalSandbox

__all__ = ["BubblewrapBackend", "LocalSandbox", "LocalSnapshot"]
