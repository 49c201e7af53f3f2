"""Reads of studies and their results, one module per reader (curators and viewers only; the
annotator's blind reads are `annotation.labelling.selectors` and `annotation.labelling.claims`):

- `results`: curators' and viewers' result tables, the agreement figures, the join with harm verdicts;
- `quality`: each annotator's quality, for curators;
- `users`: who may be made an annotator.

The agreement policy itself (which statistic, its prose) is the pure `annotation.studies.measures.agreement`.
"""
