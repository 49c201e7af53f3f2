"""Runs brought back from other harnesses: an Inspect AI eval log or a Harbor job directory read into
what this application records of a trial (`records`), checked against a frozen release and written
as one run, all or nothing (`services`)."""
