from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("candidates", "0012_release_frozen_despite"),
    ]

    operations = [
        migrations.AddField(
            model_name="candidate",
            name="demo",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddIndex(
            model_name="candidate",
            index=models.Index(condition=models.Q(("demo", True)), fields=["demo"], name="candidate_demo_idx"),
        ),
    ]
