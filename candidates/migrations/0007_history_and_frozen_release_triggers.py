"""Database triggers (PostgreSQL): decisions and revisions are append-only; a frozen release and
its items are read-only. The model guards stay for SQLite and for friendlier messages."""

from django.db import migrations

from veriharm_site.db_triggers import Trigger, operations, refuse

TRIGGERS = (
    Trigger(
        "candidates_decision",
        "veriharm_decision_append_only",
        "UPDATE OR DELETE",
        refuse("'a decision is history: it cannot be ' || lower(TG_OP) || 'd; record a new decision instead'"),
    ),
    Trigger(
        "candidates_revision",
        "veriharm_revision_append_only",
        "UPDATE OR DELETE",
        refuse("'a revision is history: it cannot be ' || lower(TG_OP) || 'd; make a new revision instead'"),
    ),
    # Freezing is the one update of a draft that sets frozen_at; after it, nothing.
    Trigger(
        "candidates_release",
        "veriharm_release_frozen",
        "UPDATE OR DELETE",
        "IF OLD.frozen_at IS NOT NULL THEN\n"
        + refuse("'release ' || OLD.name || ' ' || OLD.version || ' is frozen: it cannot be ' || lower(TG_OP) || 'd'")
        + "\nEND IF;\nIF TG_OP = 'DELETE' THEN RETURN OLD; END IF;\nRETURN NEW;",
    ),
    # Items are written before their release is frozen; none is added, changed or removed after.
    Trigger(
        "candidates_releaseitem",
        "veriharm_release_item_frozen",
        "INSERT OR UPDATE OR DELETE",
        "IF (TG_OP <> 'INSERT' AND EXISTS (SELECT 1 FROM candidates_release r\n"
        "        WHERE r.id = OLD.release_id AND r.frozen_at IS NOT NULL))\n"
        "   OR (TG_OP <> 'DELETE' AND EXISTS (SELECT 1 FROM candidates_release r\n"
        "        WHERE r.id = NEW.release_id AND r.frozen_at IS NOT NULL)) THEN\n"
        + refuse("'the items of a frozen release cannot change (' || lower(TG_OP) || ')'")
        + "\nEND IF;\nIF TG_OP = 'DELETE' THEN RETURN OLD; END IF;\nRETURN NEW;",
    ),
)


class Migration(migrations.Migration):
    dependencies = [("candidates", "0006_decision_flag_warning")]

    operations = operations(*TRIGGERS)
