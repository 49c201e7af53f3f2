"""A filter on a column being one of many ids, sent as one array parameter on PostgreSQL.

`field__in=ids` sends one parameter per id; past a few hundred the query text outgrows psycopg's
cache of parsed queries, and parsing it again costs more than running it (about 3 ms for 1,000
ids). Pages that ask about the whole top-K (the review queue) pass K ids. Other databases (the
embedded SQLite of `make run`) have no arrays and get the plain `IN` list."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BooleanField, F, Func
from django.db.models.sql.compiler import SQLCompiler


class AnyOf(Func):
    """`filter(AnyOf("candidate_id", ids))`: the column equals one of `ids`."""

    output_field = BooleanField()

    def __init__(self, field: str, values: Iterable[int]) -> None:
        super().__init__(F(field))
        self.values = [int(v) for v in values]

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any) -> tuple[str, list[Any]]:  # type: ignore[override]
        column, params = compiler.compile(self.source_expressions[0])
        if not self.values:
            return "1 = 0", []
        return f"{column} IN ({', '.join(['%s'] * len(self.values))})", [*params, *self.values]

    def as_postgresql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any
    ) -> tuple[str, list[Any]]:
        column, params = compiler.compile(self.source_expressions[0])
        return f"{column} = ANY(%s)", [*params, self.values]
