"""The path converter of every numeric route parameter (ids, ranks).

Django's own `int` matches any number of digits, and a number past the database's 64-bit integers
then fails inside the query (SQLite raises OverflowError): a 500 for a typo. `number` matches at most
18 digits, which every bigint column holds, so a longer one matches no route and is the site's 404.
Registered in `VeriharmSiteConfig.ready`, before any URLconf is read.
"""

from __future__ import annotations

MAX_DIGITS = 18


class NumberConverter:
    regex = f"[0-9]{{1,{MAX_DIGITS}}}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(int(value))
