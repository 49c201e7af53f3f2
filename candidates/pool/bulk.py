"""Fast inserts and updates for large imports.

On PostgreSQL, rows go in through COPY with primary keys drawn from the table's sequence
beforehand (COPY returns nothing), straight from plain values: no model instances, no
parameter binding, which is where INSERT ... VALUES through the ORM spends its time.
Elsewhere (SQLite, the embedded default) it is bulk_create. Either way it runs inside the
caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db import connection, models
from django.db.models.fields.reverse_related import ForeignObjectRel
from django.utils import timezone


def _column(field: models.Field[Any, Any] | ForeignObjectRel | None) -> str:
    # A concrete field (the key too) has a column; the stubs leave room for the others.
    assert isinstance(field, models.Field) and field.column is not None
    return field.column


def _column_values(model: type[models.Model], rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """Every concrete column but the key, each row completed with the field defaults."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    now = timezone.now()
    defaults: dict[str, Callable[[], Any]] = {}
    for field in fields:
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            defaults[field.attname] = lambda: now
        elif field.has_default():
            defaults[field.attname] = field.get_default
        elif field.null:
            defaults[field.attname] = lambda: None
    json_fields = {f.attname for f in fields if isinstance(f, models.JSONField)}
    table = []
    for row in rows:
        values = []
        for field in fields:
            name = field.attname
            value = row[name] if name in row else defaults[name]()
            if name in json_fields and value is not None:
                value = json.dumps(value, ensure_ascii=False)
            values.append(value)
        table.append(values)
    return [_column(f) for f in fields], table


def insert_rows(model: type[models.Model], rows: Sequence[Mapping[str, Any]]) -> list[int]:
    """Insert rows given as {attname: value} and return their primary keys, in order."""
    if not rows:
        return []
    if connection.vendor != "postgresql":
        created = model._default_manager.bulk_create([model(**row) for row in rows], batch_size=1000)
        return [obj.pk for obj in created]
    meta = model._meta
    quote = connection.ops.quote_name
    columns, table = _column_values(model, rows)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [meta.db_table, _column(meta.pk), len(rows)],
        )
        ids = [pk for (pk,) in cursor.fetchall()]
        names = ", ".join(quote(c) for c in [_column(meta.pk), *columns])
        with cursor.cursor.copy(f"COPY {quote(meta.db_table)} ({names}) FROM STDIN") as copy:
            for pk, values in zip(ids, table):
                copy.write_row([pk, *values])
    return ids


def update_column(model: type[models.Model], column: str, values: Mapping[int, Any]) -> None:
    """Set one column of many rows, by primary key: on PostgreSQL one UPDATE joined to a
    temporary table filled by COPY, instead of one statement per row."""
    if not values:
        return
    meta = model._meta
    quote = connection.ops.quote_name
    table, pk = quote(meta.db_table), quote(_column(meta.pk))
    field = meta.get_field(column)
    assert isinstance(field, models.Field)  # a column of the model, not a reverse relation
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.executemany(
                f"UPDATE {table} SET {quote(_column(field))} = %s WHERE {pk} = %s",
                [(value, key) for key, value in values.items()],
            )
            return
        cursor.execute(
            f"CREATE TEMP TABLE _new_values (id bigint PRIMARY KEY, value {field.db_type(connection)}) ON COMMIT DROP"
        )
        with cursor.cursor.copy("COPY _new_values (id, value) FROM STDIN") as copy:
            for key, value in values.items():
                copy.write_row([key, value])
        cursor.execute(
            f"UPDATE {table} SET {quote(_column(field))} = v.value FROM _new_values v WHERE {table}.{pk} = v.id"
        )
        cursor.execute("DROP TABLE _new_values")
