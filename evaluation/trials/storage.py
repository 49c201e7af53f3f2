"""Where migration 0005 names the final states' storage; it lives with the models
(`evaluation.models.storage`), and a migration is never edited."""

from __future__ import annotations

from evaluation.models.storage import final_state_storage as final_state_storage
