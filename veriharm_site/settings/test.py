"""The test suite: real PostgreSQL and real Redis at their usual local addresses."""

from .base import *  # noqa: F401,F403
from .base import VAR_DIR, env

SECRET_KEY = "test-key-not-secret"
DEBUG = False
DATABASES = {
    "default": env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/veriharm"),
}
# Derived from the database's name unless set, so that checkouts testing against differently
# named databases never share (and destroy) one test database.
DATABASES["default"]["TEST"] = {"NAME": env.str("VERIHARM_TEST_DB", default=f"test_{DATABASES['default']['NAME']}")}
# Each test process keeps its own cache: a Redis cache shared by checkouts testing against other
# databases could hand one of them another's results under the same run id.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "veriharm-tests"}}
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="redis://127.0.0.1:6379/15")
# As shipped: above the hard time limit, so recovery never relies on redelivery.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 2 * 60 * 60}
# Under pytest-xdist each process (gw0, gw1, ...) has its own test database (pytest-django suffixes
# its name) and its own keys in the broker's Redis database: a worker fixture purges the queues it
# starts on, and one process's worker must never take another's tasks, which name rows of another
# database. A key prefix rather than a database number per process: Redis has only 16, shared by
# every checkout testing on this machine.
if _xdist_process := env.str("PYTEST_XDIST_WORKER", default=""):
    CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = f"veriharm-tests-{_xdist_process}:"
# Kept final states, for the same reason: their names hold run and trial ids, which repeat across
# the processes' databases, and a process removes archives its own database does not name (a
# re-score, a prune of unreferenced archives). Each process keeps its own directory, apart from
# `make run`'s var/final-states too; the workers a test starts as subprocesses inherit
# PYTEST_XDIST_WORKER, so they store where their process reads.
VERIHARM_FINAL_STATE_DIR = env.path(
    "VERIHARM_FINAL_STATE_DIR", default=str(VAR_DIR / "test-final-states" / (_xdist_process or "main"))
)
# Workers started inside the test process (celery.contrib.testing) sweep only where a test asks:
# a sweep publishing trials of another test's run would blur what that test measures.
VERIHARM_RECOVERY_SWEEP_SECONDS = env.float("VERIHARM_RECOVERY_SWEEP_SECONDS", default=0.0)
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Launches do not wait for the sandbox tree here; the tests of that rule turn it on.
VERIHARM_LAUNCH_WAITS_FOR_SANDBOX = False
ALLOWED_HOSTS = ["*"]
# Retries of the model gateway back off in tens of milliseconds here, so the retry tests take no time.
VERIHARM_GATEWAY_BACKOFF_SECONDS = 0.02
VERIHARM_GATEWAY_BACKOFF_MAX_SECONDS = 0.2
# Infrastructure retries back off in tenths of a second here: tests of bounded retries take no time.
VERIHARM_RETRY_BACKOFF_SECONDS = 0.1
VERIHARM_RETRY_BACKOFF_MAX_SECONDS = 0.5
