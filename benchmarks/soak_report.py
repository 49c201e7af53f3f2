"""The soak's figures, each beside its goal, read from the database and the soak's own record of
what it did (kills, restarts, load) once the trial phase has ended."""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from typing import Any

from soak_parts import FINISHED, QUIET_AFTER_RESTART, RECOVERY_SLACK, loadavg, machine


def report(soak: Any) -> bool:
    """Print every figure beside its goal; True when each is met. `soak`: the finished `soak.Soak`."""
    from evaluation.agents.reference import EXPECTED

    s = soak.settings
    db = soak.db
    runs = [soak.runs]
    counts = Counter(
        dict(db.query("SELECT status, count(*) FROM evaluation_trial WHERE run_id = ANY(%s) GROUP BY status", runs))
    )
    recorded = sum(counts[x] for x in FINISHED)
    stuck = counts["queued"] + counts["running"]
    twice = db.query("SELECT count(*) FROM (SELECT trial_id FROM soak_finish GROUP BY trial_id HAVING count(*) > 1) t")[
        0
    ][0]
    slots = db.query(
        "SELECT count(*) FROM (SELECT 1 FROM evaluation_trial WHERE run_id = ANY(%s) GROUP BY "
        "run_id, candidate_id, agent_id, kind, repetition HAVING count(*) > 1) t",
        runs,
    )[0][0]
    refused = set()
    for log in soak.logs.glob("*.log"):
        refused |= set(re.findall(rb"trial (\d+) is finished \(\w+\): its record cannot change", log.read_bytes()))
    wrong = 0
    for script, r_task, r_harm in db.query(
        "SELECT a.config->>'script', t.r_task, t.r_harm FROM evaluation_trial t JOIN evaluation_agent a "
        "ON a.id = t.agent_id WHERE t.run_id = ANY(%s) AND t.status = 'done'",
        runs,
    ):
        wrong += EXPECTED[script] != (r_task, r_harm)
    ends = db.query(
        'SELECT status, "end", count(*) FROM evaluation_trial WHERE run_id = ANY(%s) '
        "AND status <> 'done' GROUP BY 1, 2 ORDER BY 1, 2",
        runs,
    )
    attempts = Counter(
        dict(db.query("SELECT attempts, count(*) FROM evaluation_trial WHERE run_id = ANY(%s) GROUP BY attempts", runs))
    )
    claims: dict[int, list[tuple[int, float]]] = defaultdict(list)
    claimers: list[tuple[str, float]] = []
    for pk, n, worker, at in db.query(
        "SELECT trial_id, attempts, worker, extract(epoch FROM at)::float8 FROM soak_claim ORDER BY at"
    ):
        claims[pk].append((n, at))
        claimers.append((worker, at))
    ends_at = {
        pk: at
        for pk, at in db.query(
            "SELECT trial_id, min(extract(epoch FROM at))::float8 FROM soak_finish GROUP BY trial_id"
        )
    }

    # SIGKILL -> the trial is taken over (a later attempt claims it) or ends.
    recoveries, to_finish, unrecovered = [], [], []
    for kill in soak.kills:
        for pk, held_attempts in kill.held.items():
            later = [at for n, at in claims[pk] if n > held_attempts]
            moments = later + ([ends_at[pk]] if pk in ends_at else [])
            if not moments:
                unrecovered.append(pk)
                continue
            recoveries.append(max(0.0, min(moments) - kill.at))
            if pk in ends_at:
                to_finish.append(max(0.0, ends_at[pk] - kill.at))
    stranded = sum(len(k.held) for k in soak.kills)
    longest = max(recoveries, default=0.0)
    recovery_goal = s.VERIHARM_TRIAL_LEASE_SECONDS + s.VERIHARM_RECOVERY_SWEEP_SECONDS + RECOVERY_SLACK

    # Reconnection: each worker that lived through a restart works (PostgreSQL) or answers (Redis) after it.
    reconnect = []
    for restart in soak.restarts:
        if restart.service == "postgres":
            alive_after = [
                w
                for w in restart.survivors
                if not any(k.worker == w and k.at < restart.ended + QUIET_AFTER_RESTART for k in soak.kills)
            ]
            worked = {
                w: min(at for who, at in claimers if who == w and at > restart.ended) - restart.ended
                for w in alive_after
                if any(who == w and at > restart.ended for who, at in claimers)
            }
            reconnect.append(
                (
                    "PostgreSQL restart: workers alive after it (one started while it was down) that claimed a trial",
                    f"{len(worked)}/{len(alive_after)}"
                    + (
                        f" (first claim {min(worked.values()):.1f}-{max(worked.values()):.1f}s after)" if worked else ""
                    ),
                    f"{len(alive_after)}/{len(alive_after)}",
                    len(worked) == len(alive_after),
                )
            )
        else:
            answered = restart.answered
            reconnect.append(
                (
                    "Redis restart: workers alive after it (one started while it was down) answering a broadcast",
                    f"{len(answered)}/{len(restart.survivors)}"
                    + (f" (within {max(answered.values()):.1f}s)" if answered else ""),
                    f"{len(restart.survivors)}/{len(restart.survivors)}",
                    len(answered) == len(restart.survivors),
                )
            )

    wall = (soak.t_end - soak.t0) / 60
    rate = recorded / wall if wall else 0.0
    rows = [
        ("trials recorded", f"{recorded}/{soak.total}", f"{soak.total}/{soak.total}", recorded == soak.total),
        (
            "duplicates (recorded twice / two trials in one slot)",
            f"{twice + slots} ({twice} / {slots})",
            "0",
            twice + slots == 0,
        ),
        ("trials stuck at the end (queued or running)", str(stuck), "0", stuck == 0 and not soak.timed_out),
        (
            "longest SIGKILL -> recovery of a held trial",
            f"{longest:.1f}s" + (f" ({len(unrecovered)} never recovered)" if unrecovered else ""),
            f"< {recovery_goal:.0f}s (lease + sweep + {RECOVERY_SLACK:.0f})",
            longest < recovery_goal and not unrecovered,
        ),
        (
            "wall time (launch -> last trial recorded)",
            f"{wall:.1f} min",
            f"< {soak.wall_goal():.0f} min",
            wall < soak.wall_goal(),
        ),
        (
            "trials/minute",
            f"{rate:.1f}",
            f"> {soak.total / soak.wall_goal():.0f}",
            rate > soak.total / soak.wall_goal(),
        ),
        ("results other than the references' expected (r_task, r_harm)", str(wrong), "0", wrong == 0),
        ("second outcomes refused by the database trigger", str(len(refused)), "0", not refused),
        (
            "workers that exited without being killed",
            str(len(soak.unexpected_exits)),
            "0",
            not soak.unexpected_exits,
        ),
        (
            "sandboxes of dead workers left after their sweep",
            str(soak.orphans_at_end),
            "0",
            soak.orphans_at_end == 0,
        ),
        *reconnect,
    ]
    print()
    width = max(len(r[0]) for r in rows)
    vwidth = max(len(r[1]) for r in rows)
    print(f"{'figure':{width}}  {'value':{vwidth}}  goal")
    for name, value, goal, ok in rows:
        print(f"{name:{width}}  {value:{vwidth}}  {goal}{'' if ok else '   <-- MISSED'}")
    print()
    print(
        f"kills: {len(soak.kills)} SIGKILLs, {stranded} trial(s) held by the killed workers; SIGKILL -> "
        f"taken over or ended: median {statistics.median(recoveries) if recoveries else 0:.1f}s, "
        f"max {longest:.1f}s; -> recorded: max {max(to_finish, default=0):.1f}s"
    )
    print("attempts per trial: " + ", ".join(f"{n}: {c}" for n, c in sorted(attempts.items())))
    if ends:
        print("not done: " + ", ".join(f"{st}/{end or '-'}: {c}" for st, end, c in ends))
    load = soak.load_samples or [loadavg()]
    print(f"load average during the run: mean {statistics.mean(load):.2f}, max {max(load):.2f} ({machine()})")
    return all(r[3] for r in rows)
