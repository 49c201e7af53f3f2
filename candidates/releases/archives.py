"""Reproducible .tar.gz archives of a release's files: the same files give the same bytes."""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Callable, Mapping
from datetime import datetime


def tar_gz(root: str, files: Mapping[str, bytes], frozen_at: str, executable: Callable[[str], bool]) -> bytes:
    """Members sorted under `root/`, owned by root with the release's freezing time, mode 755 where
    `executable(path)`, else 644; gzip without a timestamp."""
    mtime = int(datetime.fromisoformat(frozen_at).timestamp())
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, content in sorted(files.items()):
            info = tarfile.TarInfo(f"{root}/{path}")
            info.size = len(content)
            info.mtime = mtime
            info.mode = 0o755 if executable(path) else 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(content))
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue()
