"""The native harness demo: real coding-agent CLIs (Claude Code, Codex) in the sandbox, driven by a
scripted demo model that the trial's gateway reaches inside the worker.

- dialects.py: a model turn in each API's wire shapes, whole and streamed (pure);
- model.py: the scripted demo model, an httpx transport answering the gateway's forwarded calls with
  shell tool calls doing a candidate's reference script, then a final answer;
- runs.py: its agents and the demo run `demo_evaluate --wait` launches once both runtimes are built.
"""
