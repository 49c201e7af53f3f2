"""A trial's page and a candidate's results: what they read, show and offer (re-run, re-score).

- `trial_selectors`: a trial with what it ran, its retry, its transcript paged and searched, its model
  calls; `transcript_view`: how a transcript reads.
- `selectors`: each candidate's latest results, trial history and reference check, and what the
  candidates app asks through its hooks (flags, harm-test verdicts, reference states);
  `reference_state`: the one reading of a reference check; `candidate_panel`: the candidate page's panel.
- `views`, `api`, `serializers`, `queries`, `urls`, `api_urls`: the trial and candidate-results pages
  and API.

Built on `evaluation.runs` (a candidate's re-run is a run) and `evaluation.trials`, never the reverse.
"""
