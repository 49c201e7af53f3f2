"""The demo behind `make run`, an app of its own: it fills every app with demo data through their
services, and no app imports it.

- users.py: the demo logins, one per role, refused under production settings (`demo_refusal`);
  database.py: the local demo database made before accounts.User, set aside;
- generated.py: synthetic pipeline lines on real BashBench tasks (also for benchmarks and tests);
  checked.py: the hand-written candidates whose references and twins are checked in the sandbox;
  votes.py: the demo annotators' votes on the labelled study;
- agents.py: the scripted command agents; references.py: the reference check in the sandbox;
  runs.py: the demo's evaluation runs; generation.py: its generation run, whose scripted proposer
  proposes from scripted_catalogue.py;
- native/: the native harness demo run (Claude Code and Codex against the scripted demo model,
  which each trial's gateway answers in the worker);
- management/commands/: load_demo, demo_evaluate, demo_database_check, check_demo_references.

What the apps need of it at run time they ask through their hooks, filled in `apps.py`.
"""
