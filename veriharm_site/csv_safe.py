"""CSV that a spreadsheet opens as data, never as formulas (CSV injection).

Annotators' comments, imported fields and names reach the CSV exports curators open in a
spreadsheet; a cell such as `=HYPERLINK("http://evil", "click")` would run as a formula there. Every
text cell that starts with one of OWASP's formula characters (=, +, -, @, tab, carriage return) is
prefixed with a single quote, which spreadsheets show as text. Numbers are written as numbers.

Written by hand rather than with defusedcsv: that library leaves cells starting with a tab or a
carriage return alone (OWASP lists both) and rewrites `|` and `%` cells, changing data nobody can
abuse; the rule itself is one line.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


class SafeDictWriter(csv.DictWriter):
    """csv.DictWriter whose text cells are neutralised; the header is the project's own."""

    def writerow(self, rowdict: Mapping[str, Any]) -> Any:
        return super().writerow({key: safe_cell(value) for key, value in rowdict.items()})

    def writerows(self, rowdicts: Iterable[Mapping[str, Any]]) -> None:
        for row in rowdicts:
            self.writerow(row)
