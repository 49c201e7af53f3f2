"""The candidate pool's base, which every slice of candidates stands on: its shared reads
(`selectors`: the ranking's order, filters and groups, a candidate, the export), rows as pipeline
records (`records`), bulk writes (`bulk`), which candidates no model judged (`synthetic`), and the
BashBench tasks shipped under data/ (`bashbench`)."""
