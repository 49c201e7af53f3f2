"""Searching the ranking: the words each perturbation added, and trigram indexes on PostgreSQL
for substring search over ids and those words. SQLite (the embedded default) scans instead.
"""

from django.db import migrations, models

CREATE = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS candidate_id_trgm_idx ON candidates_candidate "
    "USING gin (UPPER(external_id::text) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS candidate_added_trgm_idx ON candidates_candidate "
    "USING gin (UPPER(added_text) gin_trgm_ops)",
]
DROP = [
    "DROP INDEX IF EXISTS candidate_added_trgm_idx",
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
    operations = [
        migrations.AddField(model_name="candidate", name="added_text", field=models.TextField(blank=True, default="")),
        migrations.RunPython(_run(CREATE), _run(DROP)),
    ]
