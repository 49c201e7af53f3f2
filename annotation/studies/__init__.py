"""Studies and their results, for curators and viewers: creating a study and drawing its sample,
its members, status, guidelines, gold items and adjudication, the results, agreement, the judges
beside the humans, exports and figures.

services.py    the writes of a study (`study_create`, members, status, guidelines, gold, adjudication)
sampling.py    seeded stratified sampling and item numbers (pure); drawing.py the pool of a study drawn
               from a filter of the ranking or chosen ids (one stratum)
selectors/     results.py (the result tables, agreement, the join with harm verdicts), quality.py
               (annotator quality), users.py (who may annotate)
measures/      statistics.py, agreement.py, judges.py: the figures (pure)
exports.py  figures.py  item_table.py    the exports, the charts' numbers, the results table's order
human_majority.py  candidate_panel.py  ranking_actions.py   what the app plugs into candidates' hooks
views.py  api.py  serializers.py  forms.py  queries.py   the pages and the API under annotation/studies/

This side may use the labelling side's pieces (the shape of a submitted label, the criteria, the
aligned texts); never the reverse.
"""
