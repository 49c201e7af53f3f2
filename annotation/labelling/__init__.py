"""The annotator's side, blind: the item page, next, skip, return and label, their own progress,
skipped items and labels.

selectors.py   the blind reads of an annotator's pages and API (no group, Q, judges or others' labels)
criteria.py    the three criteria each label answers, with the guideline text annotators read (pure)
line_diff.py   the source and perturbed task aligned line by line, as the item page shows them (pure)
claims.py      each item's places to claim, as one annotator's claim sees them (free or not)
order.py       the order in which one annotator meets the items, gold mixed in (pure)
services.py    claiming, skipping, returning, the guidelines read, labels, preferences
views.py  api.py  serializers.py  forms.py  queries.py   the pages and the API under annotation/my/

Nothing here imports `annotation.studies` (`.importlinter`: results, statistics and judges are out of
reach of annotator code). The studies side stands on this one: its pages show the same criteria and
the same aligned texts. What both sides' writes follow (the lock order, the refusal) is below both,
in `annotation.write_rules`; the models are at the app's root.
"""
