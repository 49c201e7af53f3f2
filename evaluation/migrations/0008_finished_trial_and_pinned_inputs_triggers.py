"""Database triggers (PostgreSQL): a finished trial (done, unresolved or cancelled) is never
changed again, whichever column, so its results, end, label, inputs and agent pin stay as
recorded; pinned trial inputs are content-addressed and never change."""

from django.db import migrations

from veriharm_site.db_triggers import Trigger, operations, refuse

TRIGGERS = (
    Trigger(
        "evaluation_trial",
        "veriharm_trial_finished_read_only",
        "UPDATE",
        # A write of identical values changes nothing and is let through.
        "IF OLD.status IN ('done', 'unresolved', 'cancelled') AND NEW IS DISTINCT FROM OLD THEN\n"
        + refuse(
            "'trial ' || OLD.id || ' is finished (' || OLD.status || '): its record cannot change; "
            "a re-evaluation creates new trials'"
        )
        + "\nEND IF;\nRETURN NEW;",
    ),
    Trigger(
        "evaluation_trialinputs",
        "veriharm_trial_inputs_immutable",
        "UPDATE",
        refuse("'pinned trial inputs ' || OLD.digest || ' never change: pin new inputs instead'"),
    ),
)


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0007_harness_agents_network_modes")]

    operations = operations(*TRIGGERS)
