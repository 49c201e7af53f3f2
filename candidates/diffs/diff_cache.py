"""Bounded diffs kept in Django's cache under their texts' content hashes.

A diff depends only on its two texts, so it is computed once and read back by every later view of
any page that shows it (a generation search's proposals, viewed again and again), whichever gunicorn
worker serves it when the cache is Redis (`CACHE_URL`, docs/settings.md).
"""

from __future__ import annotations

import hashlib

from django.core.cache import cache

from .diffing import SideBySide, bounded_side_by_side

# Bumped when the diff's rules or its shape change, so no diff of the old rules is read back.
VERSION = 1
# A week: the texts never change under their hash; this only lets unread diffs go.
TIMEOUT_SECONDS = 7 * 24 * 3600


def _key(before: str, after: str) -> str:
    digest = hashlib.sha256()
    for text in (before, after):
        encoded = text.encode("utf-8", "surrogatepass")
        # Each text's length first: ("ab", "c") and ("a", "bc") are different pairs.
        digest.update(len(encoded).to_bytes(8, "big"))
        digest.update(encoded)
    return f"diff:v{VERSION}:{digest.hexdigest()}"


def side_by_side_cached(before: str, after: str) -> SideBySide:
    """`diffing.bounded_side_by_side`, computed only when the cache does not hold it already."""
    key = _key(before, after)
    found = cache.get(key)
    if found is None:
        found = bounded_side_by_side(before, after)
        cache.set(key, found, TIMEOUT_SECONDS)
    return found
