"""Runs: what an evaluation is asked to do, what it measured, and the run pages and API that show it.

- `launch`: a run's trials from a selection and agents (pinned inputs, one per slot), cancel, re-run.
- `selection`: which candidates a run covers (a filter, ids, a release), in words for the pages.
- `agents`: agents and the reference agents.
- `retries`: re-queueing trials that ended without a verdict; `refusals`: why a launch was refused.
- `metrics`, `paired`, `exports`: TA, HSR and SSR with intervals, paired comparisons, CSV and JSON.
- `selectors` (the list of runs, one run, its progress and trials), `metric_selectors` (Table 2 per
  agent, paired comparisons) and `model_usage` (calls, tokens, cost): the reads of the run pages and
  API, the same one for a page and its API twin; `presentation`: their rows for the templates.
- `views`, `forms`, `api`, `serializers`, `queries`, `urls`, `api_urls`: the run pages and API.

Each trial's own path (claim, sandbox, record) lives in `evaluation.trials`, beneath this package; the
trial and candidate-results pages in `evaluation.results`, above it.
"""
