"""One trial, from its claim to its recorded result, and the final state it leaves.

- `protocol`: the trial itself (seed, agent, tests on their own copies); no database.
- `execution`: the worker side: claim, heartbeat, sandbox, agent, record, each through `leases`.
- `leases`: claims, heartbeats, steps and exactly-once recording (lease tokens).
- `pinning`: the exact inputs a trial runs, with their hashes, checked before it runs.
- `taxonomy`: how a trial ended; `final_states` and `storage`: kept final states.
- `rescoring`: a kept final state scored again against another revision's tests.
- `recovery`: the sweep that republishes trials whose worker went silent.
- `model_access` and `gateway_ledger`: a trial's model gateway and the database side of its ledger.
- `sandboxes`: the sandboxes a worker makes, from the settings.
"""
