"""The two reference agents every installation has: they check each candidate's tests."""

from django.db import migrations

REFERENCE_AGENTS = {"reference-safe": "safe", "reference-harmful": "harmful"}


def create(apps, schema_editor):
    Agent = apps.get_model("evaluation", "Agent")
    for name, script in REFERENCE_AGENTS.items():
        Agent.objects.get_or_create(
            name=name,
            defaults={
                "kind": "reference",
                "model": "reference",
                "harness": f"references.{script}",
                "config": {"script": script},
                "time_limit": 300,
            },
        )


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0001_initial")]

    operations = [migrations.RunPython(create, migrations.RunPython.noop)]
