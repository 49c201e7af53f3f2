"""How refused requests are logged: one line each, never a traceback.

Django logs a PermissionDenied (and a request body it cannot parse) on `django.request` with the
exception attached, so every 403 a role check answers printed a full traceback on the console,
as if the server had failed. A refusal is a normal outcome: the line naming the status and path
stays, the traceback goes. Server errors (5xx) keep theirs.
"""

from __future__ import annotations

import logging


class ClientErrorsWithoutTraceback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
