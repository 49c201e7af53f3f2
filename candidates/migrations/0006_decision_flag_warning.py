"""A decision keeps the warning a curator acknowledged when approving a flagged candidate."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("candidates", "0005_search_text_and_ranking_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="decision",
            name="flag_warning",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.AddConstraint(
            model_name="decision",
            constraint=models.CheckConstraint(
                condition=models.Q(("verdict", "approve"), ("flag_warning", ""), _connector="OR"),
                name="decision_warning_only_on_approval",
            ),
        ),
    ]
