"""PostgreSQL triggers for rules the models also enforce in Python.

The model guards (AppendOnlyQuerySet, ReleaseFrozen, the trial lease) stop the application's
own paths; a raw `_base_manager` update, a shell, a data migration or another client of the
database would pass them. These triggers say no at the database. They raise SQLSTATE 23001
(restrict_violation), which Django reports as IntegrityError. On SQLite (`make run`) the Python
guards are all there is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.db import migrations
    from django.db.backends.base.schema import BaseDatabaseSchemaEditor
    from django.db.migrations.state import StateApps


@dataclass(frozen=True)
class Trigger:
    table: str
    name: str
    events: str  # e.g. "UPDATE OR DELETE"
    body: str  # plpgsql statements; RETURN decides what happens when nothing is raised

    def create_sql(self) -> str:
        return f"""
CREATE OR REPLACE FUNCTION {self.name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
{self.body}
END;
$$;
DROP TRIGGER IF EXISTS {self.name} ON {self.table};
CREATE TRIGGER {self.name} BEFORE {self.events} ON {self.table}
    FOR EACH ROW EXECUTE FUNCTION {self.name}();
"""

    def drop_sql(self) -> str:
        return f"DROP TRIGGER IF EXISTS {self.name} ON {self.table}; DROP FUNCTION IF EXISTS {self.name}();"


def refuse(message: str) -> str:
    return f"RAISE EXCEPTION USING ERRCODE = 'restrict_violation', MESSAGE = {message};"


def operations(*triggers: Trigger) -> list[migrations.RunPython]:
    """Migration operations creating `triggers` on PostgreSQL and doing nothing elsewhere."""
    from django.db import migrations

    def forward(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        if schema_editor.connection.vendor == "postgresql":
            for trigger in triggers:
                schema_editor.execute(trigger.create_sql())

    def backward(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        if schema_editor.connection.vendor == "postgresql":
            for trigger in triggers:
                schema_editor.execute(trigger.drop_sql())

    return [migrations.RunPython(forward, backward, elidable=False)]
