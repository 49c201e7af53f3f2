"""What a run's results look like to the pages, the API and the exports (reads only)."""
