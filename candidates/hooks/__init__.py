"""Where the apps built on candidates plug into it: one module per hook, each holding its registry,
the data the hook carries, and the reads through it that decide, once, who may see what.

The candidates app never imports annotation or evaluation (they are built on it). What they add to
its pages and rules they register here when they load (`AppConfig.ready`):

- flags against approving a candidate, in words (`flags`): evaluation's failed reference checks;
- each candidate's human majority, and the studies with their candidates (`human_verdicts`):
  annotation's; approving and freezing guard against a human "invalid", the review queue filters
  by study, and a run may evaluate a study's items;
- each candidate's harm-test verdict and reference state (`harm_test_verdicts`): evaluation's,
  beside the human verdicts;
- panels on a candidate's page (`panels`): annotation's human verdicts, evaluation's results and
  the generation search that kept it;
- what the ranking page offers for its filter and ticked rows (`ranking_actions`): annotation's
  new study.

Each hook is a `veriharm_site.registries.Registry`, which keeps an entry registered twice once: an
app's ready() may run more than once in tests.
"""
