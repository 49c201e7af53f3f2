"""Two indexes that no read uses, dropped because every import pays for each row it writes:

- the `varchar_pattern_ops` copy Django adds beside a unique CharField on PostgreSQL, for
  `LIKE 'prefix%'`; no query looks candidates up by an id prefix (the search reads the trigram
  index of `search_text`, which holds the id);
- the judgements' own index on `candidate_id`, which the unique (candidate, judge) index covers.
"""

from django.db import migrations, models

LIKE_INDEX = "candidates_candidate_external_id_5eaf3eef_like"


def drop_like_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {LIKE_INDEX}")


def create_like_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {LIKE_INDEX} ON candidates_candidate (external_id varchar_pattern_ops)"
        )


class Migration(migrations.Migration):
    dependencies = [("candidates", "0008_import_jobs")]

    operations = [
        migrations.RunPython(drop_like_index, create_like_index),
        migrations.AlterField(
            model_name="judgement",
            name="candidate",
            field=models.ForeignKey(
                db_index=False,
                on_delete=models.deletion.CASCADE,
                related_name="judgements",
                to="candidates.candidate",
            ),
        ),
    ]
