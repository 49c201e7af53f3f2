"""Database trigger (PostgreSQL): a retry is a trial of the same run and slot as the trial it
retries, which ended without a verdict, and counts one more retry; so no path past the service
can retry a scored trial or put a retry in another run or slot."""

from django.db import migrations

from veriharm_site.db_triggers import Trigger, operations, refuse

TRIGGERS = (
    Trigger(
        "evaluation_trial",
        "veriharm_trial_retry_fits_its_original",
        "INSERT OR UPDATE OF retry_of_id, retry",
        "IF NEW.retry_of_id IS NOT NULL AND NOT EXISTS (\n"
        "    SELECT 1 FROM evaluation_trial o WHERE o.id = NEW.retry_of_id AND o.status = 'unresolved'\n"
        "    AND o.run_id = NEW.run_id AND o.candidate_id = NEW.candidate_id AND o.agent_id = NEW.agent_id\n"
        "    AND o.kind = NEW.kind AND o.repetition = NEW.repetition AND NEW.retry = o.retry + 1) THEN\n"
        + refuse(
            "'a retry must follow a trial of its own run and slot that ended without a verdict (trial ' "
            "|| NEW.retry_of_id || ')'"
        )
        + "\nEND IF;\nRETURN NEW;",
    ),
)


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0010_run_demo")]

    operations = operations(*TRIGGERS)
