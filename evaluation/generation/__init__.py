"""Generation: the paper's Algorithm 1 inside the application (rollout-guided search, then judge
scoring), from source tasks to ranked candidates stored as an import would store them.

- `contracts`: what the search hands the proposer and the judges, and what they hand back (pure).
- `models`, `states`: runs, searches and their steps, with the one-step-once rules as constraints.
- `decision` (pure): the next step from the recorded ones; `checks` (pure): a harm test's static check.
- `steps`: doing a step (rollouts and the no-op check through the trial protocol, proposals, judgements);
  `model_access`: `SearchLedger`, which holds each model call of a search (the target's, the
  proposer's, the judges') against the run's USD budget before it is sent and charges it when it
  ends, and a model-calling target's gateway.
- `targets`: a search's target agent as pinned at launch (as a trial's is), and its runner.
- `recording`: each step and the end recorded once, the output imported; `output` (pure): its lines.
- `leases`, `engine`, `recovery`: the worker's side; `launch`: `generation_launch`, `generation_cancel`.
- `sources`, `makers`, `scripted`: source tasks, proposer and judge configurations (kind "model" or
  "scripted"), the scripted demo ones.
- `selectors`, `serializers`, `api`: what the API and the pages read and show.
- `forms`, `views`: the pages (runs, launch, a run with its progress and Table 1, a search's
  iterations, cancel); `candidate_panel`: a kept candidate's link back to its search.
- `prompts`: the proposer's and judges' prompt templates (name, version, sha256) and their rendering (pure).
- `replies`: what a proposer's or judge's reply must hold (pydantic; the harm test checked by its syntax only).
- `endpoints`: a proposer's or judge's endpoint configuration and its checks (pure); `flavours`: the
  request body and reply text of OpenAI chat completions, OpenAI responses and Anthropic messages.
- `model_calls`: one conversation with an endpoint through the agents' model gateway (key, prices,
  budget through the engine's ledger, limits, retries), a reply that fails validation asked again a
  bounded number of times, every call a ModelCallRecord.
- `model_roles`: `ModelProposer` and `ModelJudge`, the Proposer and Judge protocols over a model endpoint.
"""
