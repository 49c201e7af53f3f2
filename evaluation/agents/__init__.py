"""Agent harnesses: reference scripts, commands in the sandbox, and an OpenAI-compatible loop."""
