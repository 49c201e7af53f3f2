"""The pipeline format's parser under its older name (the code now lives in candidates.pipeline)."""

from __future__ import annotations

from .pipeline.format import *  # noqa: F403
from .pipeline.format import __all__  # noqa: F401
