"""The rules every write of the app follows, on either side: both the annotator's writes
(`annotation.labelling.services`) and a study's (`annotation.studies.services`) stand on them.

locking.py     `rows_locked`: the one way rows are locked, so both sides lock in one order
refusals.py    `AnnotationError`, the refusal both sides raise, and `MAX_REASON`, the length of a reason

Nothing here imports either side (`.importlinter`): the rules are below both.
"""
