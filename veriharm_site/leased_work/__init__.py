"""Work a worker holds through a lease, written once for every kind of background work.

A row of some model (a trial, a generation search) is held by one worker at a time: a claim hands
out a fresh token, a heartbeat keeps it fresh, and every later write is conditional on that token,
so a second delivery of the same task, or a worker that lost its lease, records nothing. Nothing
here knows an app's model: each kind of work describes its rows with a `Lease` (the model, its
status values and field names) and states only what it does and how it records a step.

- leases.py     `Lease`, the claim (`lease_claim`: missing / finished / busy, takeover of an expired
                lease, an abandoned attempt taken back), `lease_heartbeat`, `lease_release` (back to
                the queue), `lease_locked` and `lease_held` (the row under the claim, for writes
                conditional on the token)
- heartbeat.py  `LeaseHeartbeat`, the thread refreshing a lease while the work runs
- sweep.py      the recovery sweep's part: expired leases and queued rows that lost their message,
                published again once across every worker (`republish`); apps register their
                sweepers through `veriharm_site.recovery.sweeper_register`
- retries.py    a Celery task's retries: a database that is briefly away, a live holder, a sandbox
                system being built, each with its backoff

The site package imports no app, so this package imports none either (`.importlinter`).
"""
