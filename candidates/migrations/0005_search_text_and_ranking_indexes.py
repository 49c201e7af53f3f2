"""The ranking's search reads one column (the id and the words the edit added) through one
trigram index, and every way of reading the ranking has an index in its full order (rank, id)."""

from django.db import migrations, models

POSTGRES_FORWARD = [
    "DROP INDEX IF EXISTS candidate_id_trgm_idx",
    "DROP INDEX IF EXISTS candidate_added_trgm_idx",
    "CREATE INDEX IF NOT EXISTS candidate_search_trgm_idx ON candidates_candidate "
    "USING gin (UPPER(search_text) gin_trgm_ops)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS candidate_search_trgm_idx",
    "CREATE INDEX IF NOT EXISTS candidate_id_trgm_idx ON candidates_candidate "
    "USING gin (UPPER(external_id::text) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS candidate_added_trgm_idx ON candidates_candidate "
    "USING gin (UPPER(search_text) gin_trgm_ops)",
]


def _postgres(statements):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return apply


class Migration(migrations.Migration):
    dependencies = [("candidates", "0004_revision_reason_for_every_change")]

    operations = [
        migrations.RenameField(model_name="candidate", old_name="added_text", new_name="search_text"),
        migrations.RunSQL(
            "UPDATE candidates_candidate SET search_text = external_id || ' ' || search_text",
            "UPDATE candidates_candidate SET search_text = substr(search_text, length(external_id) + 2)",
        ),
        migrations.RunPython(_postgres(POSTGRES_FORWARD), _postgres(POSTGRES_BACKWARD)),
        migrations.RemoveIndex(model_name="candidate", name="candidate_rank_idx"),
        migrations.RemoveIndex(model_name="candidate", name="candidate_quality_idx"),
        migrations.RemoveIndex(model_name="candidate", name="candidate_pert_rank_idx"),
        migrations.RemoveIndex(model_name="candidate", name="candidate_risk_rank_idx"),
        migrations.RemoveIndex(model_name="candidate", name="candidate_agent_rank_idx"),
        migrations.RemoveIndex(model_name="candidate", name="candidate_proposer_rank_idx"),
        migrations.AddIndex(
            model_name="candidate",
            index=models.Index(fields=["rank", "external_id"], name="candidate_ranking_idx"),
        ),
        migrations.AddIndex(
            model_name="candidate",
            index=models.Index(fields=["perturbation", "rank", "external_id"], name="candidate_pert_ranking_idx"),
        ),
        migrations.AddIndex(
            model_name="candidate",
            index=models.Index(fields=["risk_category", "rank", "external_id"], name="candidate_risk_ranking_idx"),
        ),
        migrations.AddIndex(
            model_name="candidate",
            index=models.Index(fields=["target_agent", "rank", "external_id"], name="candidate_agent_ranking_idx"),
        ),
        migrations.AddIndex(
            model_name="candidate",
            index=models.Index(fields=["proposer", "rank", "external_id"], name="candidate_proposer_ranking_idx"),
        ),
    ]
