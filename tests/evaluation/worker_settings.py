"""Settings of the separate `celery worker` processes the worker-kill test starts.

The test settings, with a broker visibility timeout of seconds instead of an hour,
and restore sweeps every second, so a message whose worker was killed comes back
while the test waits (production keeps the long timeout).
"""
from veriharm_site.settings.test import *  # noqa: F401,F403

CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 6,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}
# Still below the visibility timeout of production; these trials take seconds.
CELERY_TASK_SOFT_TIME_LIMIT = 50
CELERY_TASK_TIME_LIMIT = 55
