"""Reads of annotation studies, one module per reader:

- `annotator`: the blind reads of an annotator's pages and API (no group, Q, judges or others' labels);
- `claims`: each item's places to claim, for the annotator's next item and the claiming services;
- `results`: curators' and viewers' result tables, the agreement figures, the join with harm verdicts;
- `quality`: each annotator's quality, for curators;
- `users`: who may be made an annotator.

The agreement policy itself (which statistic, its prose) is the pure `annotation.agreement`.
"""
