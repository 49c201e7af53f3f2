"""Where migration 0005 names how a trial ended; it lives with the models (`evaluation.models.taxonomy`),
and a migration is never edited."""

from __future__ import annotations

from evaluation.models.taxonomy import ExitStatus as ExitStatus
from evaluation.models.taxonomy import TrialEnd as TrialEnd
from evaluation.models.taxonomy import end_of_tests as end_of_tests
