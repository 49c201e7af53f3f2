"""Host-side filesystem work of the local backend, done with system calls rather than child processes.

A test-phase copy is made, owned and torn down while its trial waits; a `mount`, `umount`,
`find` or `chown` process costs a fork and an exec each (10-40 ms on a busy 2-core host),
where the system call itself takes microseconds. Python's standard library has no mount(2),
so that one goes through libc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import stat
from pathlib import Path

# <sys/mount.h>
MS_NOSUID = 0x2
MS_NODEV = 0x4
MNT_DETACH = 0x2

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)
_libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)


class HostFsError(OSError):
    pass


def _raise_errno(what: str, path: Path) -> None:
    code = ctypes.get_errno()
    raise HostFsError(code, f"{what} {path}: {os.strerror(code)}")


def mount_tmpfs(path: Path, options: str) -> None:
    """A tmpfs at ``path``, nosuid and nodev (nothing on it may gain privileges on the host side)."""
    if _libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs", MS_NOSUID | MS_NODEV, options.encode()) != 0:
        _raise_errno("mount tmpfs on", path)


def unmount(path: Path) -> None:
    """Unmount ``path``; when that fails (busy: a host process looking inside), detach it now, freed
    when unused. Best effort, as teardown is: what stays mounted is the orphan sweep's."""
    target = os.fsencode(path)
    if _libc.umount2(target, 0) != 0:
        _libc.umount2(target, MNT_DETACH)


def chown_tree(top: Path, uid: int) -> None:
    """Give everything under ``top`` (not ``top`` itself) to uid:uid, never following a symlink and
    never leaving ``top``'s filesystem.

    chown clears the setuid and setgid bits of regular files; they are part of the state (a harm
    test may look for a setuid binary), so they are put back. Nothing runs in the sandbox
    meanwhile, so the path chmod opens is the regular file just looked at.
    """
    device = os.lstat(top).st_dev
    pending = [os.fspath(top)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                os.chown(entry.path, uid, uid, follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    if info.st_dev == device:
                        pending.append(entry.path)
                elif stat.S_ISREG(info.st_mode) and info.st_mode & (stat.S_ISUID | stat.S_ISGID):
                    os.chmod(entry.path, stat.S_IMODE(info.st_mode))
