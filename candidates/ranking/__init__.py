"""The ranking's slice: its page and API (the ranking, one candidate, the export in the pipeline
format and the format's JSON Schema), their query parameters, serializers and paging reads."""
