"""Writes of runs: agents, launching, cancelling and retrying runs, each trial's lease, reference checks.

Callers use the names below (`from evaluation import runs`, then `runs.run_launch(...)`); each
sub-domain lives in its own module.
"""

from .agents import REFERENCE_AGENTS, agent_create, reference_agents_ensure
from .launch import (
    DEFAULT_REPETITIONS,
    MAX_REPETITIONS,
    candidate_rerun,
    default_backend,
    run_cancel,
    run_launch,
    run_mark_demo,
    run_rerun,
)
from .leases import (
    AttemptResult,
    Claim,
    ClaimRefused,
    KeptState,
    model_call_record,
    trial_cancel_requested,
    trial_cancelled,
    trial_claim,
    trial_end,
    trial_fail,
    trial_heartbeat,
    trial_record,
    trial_step_add,
    trial_steps_next_index,
)
from .reference_checks import reference_check_update
from .refusals import LaunchRefused
from .retries import Retried, retryable_counts, run_retry_unscored

__all__ = [
    "AttemptResult",
    "DEFAULT_REPETITIONS",
    "MAX_REPETITIONS",
    "REFERENCE_AGENTS",
    "Claim",
    "ClaimRefused",
    "KeptState",
    "LaunchRefused",
    "Retried",
    "agent_create",
    "candidate_rerun",
    "default_backend",
    "model_call_record",
    "reference_agents_ensure",
    "reference_check_update",
    "run_cancel",
    "run_launch",
    "run_mark_demo",
    "run_rerun",
    "run_retry_unscored",
    "retryable_counts",
    "trial_cancel_requested",
    "trial_cancelled",
    "trial_claim",
    "trial_end",
    "trial_fail",
    "trial_heartbeat",
    "trial_record",
    "trial_step_add",
    "trial_steps_next_index",
]
