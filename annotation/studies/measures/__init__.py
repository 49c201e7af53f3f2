"""What a study's results are measured with (pure: no Django, no database): agreement between
annotators, the majority and its statistics, the judges beside the humans. The study's selectors
and pages stand on these; these import nothing of the studies around them."""
