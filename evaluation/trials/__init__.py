"""One trial, from its claim to its recorded result, and the final state it leaves.

- `protocol`: the trial itself (seed, agent, tests on their own copies); no database.
- `execution`: the worker side: claim, heartbeat, sandbox, agent, record, each through `leases`.
- `leases`: claims, heartbeats, steps and exactly-once recording (lease tokens).
- `pinning`: the exact inputs a trial runs, with their hashes, checked before it runs, and its agent
  pinned (`agents.pinning`) as a trial of its kind runs it.
- `final_states`: kept final states (how a trial ended and where states are kept live with the models:
  `evaluation.models.taxonomy`, `evaluation.models.storage`; `taxonomy` and `storage` here are the
  names migrations hold).
- `rescoring`: a kept final state scored again against another revision's tests.
- `recovery`: the sweep that republishes trials whose worker went silent.
- `model_access` and `gateway_ledger`: a trial's model gateway and the database side of its ledger.
- `sandboxes`: the sandboxes a worker makes, from the settings (whether the sandbox system they need
  is ready is `agents.sandbox_status`: launching waits for it, a worker gives a trial back).
- `budget`: what the worker reads of a run's model budget.
- `reference_checks`: each candidate's reference verdict, recorded as its reference trials end.

The worker's package: it imports no run page, result read or launch (`.importlinter`).
"""
