"""Texts set side by side: word and line diffs of a candidate's revisions and of a perturbation
(`diffing`), a page's diffs cached under their texts' hashes (`diff_cache`), and highlighted code
with its stylesheet (`highlight`, `views`). Imports nothing else of the app."""
