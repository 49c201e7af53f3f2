"""Settings of the separate `celery worker` processes the recovery tests start.

The test settings, which keep the shipped broker options (a visibility timeout of two hours,
above the hard time limit): a killed worker's trial must come back through the recovery sweep,
never through a redelivery. The lease, heartbeat and sweep interval come from the environment
the test sets (the same variables a deployment would set).
"""

from veriharm_site.settings.test import *  # noqa: F401,F403
from veriharm_site.settings.test import env

VERIHARM_RECOVERY_SWEEP_SECONDS = env.float("VERIHARM_RECOVERY_SWEEP_SECONDS", default=60.0)
