"""Runs: what an evaluation is asked to do, and what it measured.

- `launch`: a run's trials from a selection and agents (pinned inputs, one per slot), cancel, re-run.
- `selection`: which candidates a run covers (a filter, ids, a release), in words for the pages.
- `agents`: agents and the reference agents; `reference_checks`: each candidate's reference verdict.
- `retries`: re-queueing trials that ended without a verdict; `refusals`: why a launch was refused.
- `sandbox_status`: whether the sandbox system is ready to take trials.
- `metrics`, `paired`, `exports`: TA, HSR and SSR with intervals, paired comparisons, CSV and JSON.

Each trial's own path (claim, sandbox, record) lives in `evaluation.trials`.
"""
