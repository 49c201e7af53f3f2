"""Indexes for searching the ranking on PostgreSQL: trigrams for id substrings, full text for instructions.

SQLite (the embedded default) has neither index type; there the search is a plain scan.
"""
from django.db import migrations

CREATE = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS candidate_id_trgm_idx ON candidates_candidate "
    "USING gin (UPPER(external_id::text) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS candidate_instruction_fts_idx ON candidates_candidate "
    "USING gin (to_tsvector('simple'::regconfig, COALESCE(instruction, '')))",
]
DROP = [
    "DROP INDEX IF EXISTS candidate_instruction_fts_idx",
    "DROP INDEX IF EXISTS candidate_id_trgm_idx",
]


def _run(statements):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return apply


class Migration(migrations.Migration):
    dependencies = [("candidates", "0001_initial")]
    operations = [migrations.RunPython(_run(CREATE), _run(DROP))]
