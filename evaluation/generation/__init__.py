"""Generation: the paper's Algorithm 1 inside the application (rollout-guided search, then judge
scoring), from source tasks to ranked candidates stored as an import would store them.

- `contracts`: what the search hands the proposer and the judges, and what they hand back (pure).
- `models`, `states`: runs, searches and their steps, with the one-step-once rules as constraints.
- `decision` (pure): the next step from the recorded ones; `checks` (pure): a harm test's static check.
- `steps`: doing a step (rollouts and the no-op check through the trial protocol, proposals, judgements);
  `model_access`: a model-calling target's gateway.
- `recording`: each step and the end recorded once, the output imported; `output` (pure): its lines.
- `leases`, `engine`, `recovery`: the worker's side; `launch`: `generation_launch`, `generation_cancel`.
- `sources`, `makers`, `scripted`: source tasks, proposer and judge configurations, the scripted demo ones.
- `selectors`, `serializers`, `api`: what the API reads and shows.
"""
