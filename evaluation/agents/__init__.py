"""Agent harnesses: reference scripts, commands in the sandbox, and an OpenAI-compatible loop.

Beside them what launches and workers ask of an agent: `pinning` (the agent as a trial or search
runs it, its hash and the runner built from it) and `sandbox_status` (whether the sandbox system
a set of agents needs is ready)."""
