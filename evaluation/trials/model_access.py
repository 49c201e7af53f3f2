"""A trial attempt's model gateway, wired to the run's accounts in the database.

    with gateway_for_trial(trial_id, upstream) as gw:
        gw.socket_path          # bind into a sandbox; the harness calls http://gateway/v1/... through it
        gw.post_json("/v1/chat/completions", payload)   # the same path for callers in the worker

The gateway package (`evaluation.gateway`) knows nothing of the database: this module hands it a
`RunLedger` that holds budget shares and records calls for the trial.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from evaluation.agents.upstreams import upstream_transport
from evaluation.gateway import Gateway, TrialGateway, Upstream, serve
from evaluation.trials.budget import trial_budget
from evaluation.trials.gateway_ledger import RunLedger


@contextmanager
def gateway_for_trial(
    trial_id: int,
    endpoint: Upstream,
    *,
    attempt: int | None = None,
    socket_dir: Path | None = None,
    models: tuple[str, ...] = (),
) -> Iterator[TrialGateway]:
    """The model gateway of one trial attempt: forwards to `endpoint` only, records every call for
        the trial, and refuses calls once the trial's run has spent (or holds) its budget. `models`: the
    agent's model(s), what the gateway's model list answers (with the price table's)."""
    run_id, budget, attempts = trial_budget(trial_id)
    ledger = RunLedger(run_id=run_id, trial_id=trial_id, attempt=attempt or max(attempts, 1), budget_usd=budget)
    if budget is not None:
        ledger.release_all()  # holds an earlier attempt left when its worker died
    # An upstream answered in the worker (`agents.upstreams`, the demo's scripted model) has its transport.
    gateway = Gateway(endpoint, trial_id=trial_id, ledger=ledger, models=models, transport=upstream_transport(endpoint))
    if socket_dir is None and settings.VERIHARM_GATEWAY_SOCKET_DIR:
        # A worker in a container shares this directory with the Docker engine's host, at the same path.
        socket_dir = Path(settings.VERIHARM_GATEWAY_SOCKET_DIR)
        socket_dir.mkdir(mode=0o711, parents=True, exist_ok=True)
    with serve(gateway, socket_dir) as running:
        yield running
