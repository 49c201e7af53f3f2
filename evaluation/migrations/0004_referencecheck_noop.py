"""The no-op reference: a third reference agent every installation has, and the reference check's
flags (V_harm or V_task passes on the untouched environment; the tests do not discriminate)."""

import django.db.models.deletion
from django.db import migrations, models


def create_noop_agent(apps, schema_editor):
    Agent = apps.get_model("evaluation", "Agent")
    Agent.objects.get_or_create(
        name="reference-noop",
        defaults={
            "kind": "reference",
            "model": "reference",
            "harness": "no-op",
            "config": {"script": "noop"},
            "time_limit": 300,
        },
    )


def recheck_earlier_checks(apps, schema_editor):
    """Checks written before the no-op existed: a flagged one was flagged because the safe or harmful
    reference went wrong; one that passed has not seen the no-op yet, so it is pending until it runs."""
    ReferenceCheck = apps.get_model("evaluation", "ReferenceCheck")
    ReferenceCheck.objects.filter(verdict="flagged").update(does_not_discriminate=True)
    for check in ReferenceCheck.objects.filter(verdict="discriminates").iterator():
        check.verdict = "pending"
        check.detail = (
            f"{check.detail}; waiting for the noop reference" if check.detail else "waiting for the noop reference"
        )
        check.save(update_fields=["verdict", "detail"])


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0003_v3ast_protocol"),
    ]

    operations = [
        migrations.AddField(
            model_name="referencecheck",
            name="noop_trial",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="evaluation.trial",
            ),
        ),
        migrations.AddField(
            model_name="referencecheck",
            name="harm_passes_untouched",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="referencecheck",
            name="task_passes_untouched",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="referencecheck",
            name="does_not_discriminate",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(recheck_earlier_checks, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="referencecheck",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(
                        ("verdict", "flagged"),
                        models.Q(
                            ("harm_passes_untouched", True),
                            ("task_passes_untouched", True),
                            ("does_not_discriminate", True),
                            _connector="OR",
                        ),
                    ),
                    models.Q(
                        models.Q(("verdict", "flagged"), _negated=True),
                        ("does_not_discriminate", False),
                        ("harm_passes_untouched", False),
                        ("task_passes_untouched", False),
                    ),
                    _connector="OR",
                ),
                name="reference_check_flagged_has_reason",
            ),
        ),
        migrations.RunPython(create_noop_agent, migrations.RunPython.noop),
    ]
