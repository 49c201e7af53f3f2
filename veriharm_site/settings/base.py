"""Settings shared by every environment; values come from the environment.

With nothing set, the application runs on an embedded default that needs no
server: SQLite for the database and kombu's filesystem transport for Celery.
Set DATABASE_URL and CELERY_BROKER_URL to use PostgreSQL and Redis.
"""

from pathlib import Path

import environ
from kombu import Exchange, Queue

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(environ.Env().str("VERIHARM_VAR_DIR", default=str(BASE_DIR / "var")))

env = environ.Env()
env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DJANGO_DEBUG", default=False)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "veriharm_site",
    "veriharm_site.accounts",
    "candidates",
    "annotation",
    "evaluation",
    # Last: the demo fills the apps above through their services, and none of them imports it.
    "demo",
]

MIDDLEWARE = [
    # First, so that the time it measures is the whole request's.
    "veriharm_site.request_metrics.RequestLatencyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Before sessions, CSRF and authentication read cookies, credentials and forms.
    "veriharm_site.input_safety.InputSafetyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it answers a locked-out login with its lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "veriharm_site.urls"
WSGI_APPLICATION = "veriharm_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "veriharm_site.context_processors.roles",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # WAL lets the web server read while the worker writes; IMMEDIATE transactions take the write
    # lock when they begin, so two processes never deadlock upgrading a read (SQLite would answer
    # "database is locked" at once instead of waiting out the timeout).
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Our own user model from the first migration on (veriharm_site/accounts); reference it as
# settings.AUTH_USER_MODEL in models and get_user_model() in code, never auth.User.
AUTH_USER_MODEL = "accounts.User"

# Login throttling (django-axes, attempts kept in the database so every web process and worker
# sees them): after AXES_FAILURE_LIMIT failed logins for one username from one address, further
# attempts are refused (HTTP 429) until the cool-off has passed; a successful login resets the
# count. The API's Basic authentication goes through the same backend and counts the same way.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("VERIHARM_LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("VERIHARM_LOGIN_COOLOFF_MINUTES", default=15.0) / 60  # hours
# Username and address together: an attacker elsewhere cannot lock a user out of their own desk.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Its start-up banner would be printed before the output of every management command.
AXES_VERBOSE = False
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Served from the source folders by WhiteNoise's finders; production collects them into STATIC_ROOT.
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Limits on what clients send (docs/limits.md) -----------------------------------------------
# Every body that is not an upload (JSON, forms) is at most this many bytes (Django's own setting;
# the API's JSON parser honours it too). Refused with 413 before it is read.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("VERIHARM_MAX_BODY_BYTES", default=2 * 1024 * 1024)
# An upload request (multipart: pipeline files, a release bundle) is at most this many bytes in all.
VERIHARM_MAX_UPLOAD_BYTES = env.int("VERIHARM_MAX_UPLOAD_BYTES", default=256 * 1024 * 1024)
# Uploads are streamed to disk past 5 MB.
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# JSON (API bodies and each pipeline line) may nest arrays and objects at most this deep; checked
# before parsing, so no document can exhaust the parser's stack.
VERIHARM_JSON_MAX_DEPTH = env.int("VERIHARM_JSON_MAX_DEPTH", default=32)
# One line of a pipeline file, in bytes, and each text field of a line (instruction, tests, scripts,
# setup, file contents, rationales...), in characters.
VERIHARM_PIPELINE_MAX_LINE_BYTES = env.int("VERIHARM_PIPELINE_MAX_LINE_BYTES", default=2 * 1024 * 1024)
VERIHARM_PIPELINE_MAX_TEXT_CHARS = env.int("VERIHARM_PIPELINE_MAX_TEXT_CHARS", default=100_000)
# Free text people type: a study's or a release's description; an annotator's comment, a curator's
# note and reason.
VERIHARM_MAX_DESCRIPTION_CHARS = env.int("VERIHARM_MAX_DESCRIPTION_CHARS", default=10_000)
VERIHARM_MAX_COMMENT_CHARS = env.int("VERIHARM_MAX_COMMENT_CHARS", default=5_000)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "veriharm_site.api_paging.CheckedPageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PARSER_CLASSES": [
        "veriharm_site.input_safety.LimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "veriharm_site.api_errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "VeriHarm Review API",
    "DESCRIPTION": "Candidates, annotation studies and agent evaluations of the VeriHarm pipeline.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI's scripts, styles and icon from drf-spectacular-sidecar's static files, not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Every operation documents its refusals in the one error shape (veriharm_site/api_errors.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "veriharm_site.api_errors.document_refusals",
    ],
    # Uploads are binary parts of a multipart body, not URI strings.
    "COMPONENT_SPLIT_REQUEST": True,
    # Every numeric path parameter (veriharm_site/converters.py): a whole number of at most 18 digits.
    "PATH_CONVERTER_OVERRIDES": {"number": {"type": "integer", "minimum": 0, "maximum": 10**18 - 1}},
    # Curator decisions and evaluation reference checks both have a "verdict", and trials, studies and
    # re-scores a "status": name them apart.
    "ENUM_NAME_OVERRIDES": {
        "DecisionVerdictEnum": "candidates.models.Verdict",
        "ReferenceStateEnum": "candidates.hooks.harm_test_verdicts.REFERENCE_STATES",
        "RescoreStatusEnum": "evaluation.models.RescoreStatus",
        "TrialStatusEnum": "evaluation.models.TrialStatus",
        "TrialEndEnum": "evaluation.models.taxonomy.TrialEnd",
    },
}

# Django's cache holds work worth keeping between requests (a V3AST run's results, under a key
# that changes with what they depend on). In-process memory by default, enough for the embedded
# setup's one web process; gunicorn's several workers share one computation only through Redis,
# which a deployment already runs: CACHE_URL=redis://host:6379/1 (a database of its own, not the
# broker's). The database cache would add a query and the whole pickled entry to every read.
CACHES = {"default": env.cache_url("CACHE_URL", default="locmemcache://veriharm")}

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://")
if CELERY_BROKER_URL.startswith("filesystem"):
    _broker_dir = VAR_DIR / "broker"
    for _folder in ("queue", "processed"):
        (_broker_dir / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "store_processed": False,
        # kombu's exchange table; its default, "control", is a folder in the working directory (the repository).
        "control_folder": str(_broker_dir / "control"),
    }
else:
    # A message a worker took is redelivered only after this, so it must exceed the longest task
    # (CELERY_TASK_TIME_LIMIT; checked when a worker starts and by `manage.py check`). Recovery
    # from a dead worker does not wait for it: the recovery sweep below re-publishes its work.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 2 * 60 * 60}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
# Queues (docs/deployment.md): trials and re-scores go to the queue of their run's sandbox backend,
# so only workers that have that backend take them (a worker without Docker: -Q sandbox-local,default);
# imports and everything else to "default". A worker started without -Q consumes every queue here.
CELERY_TASK_DEFAULT_QUEUE = "default"
VERIHARM_SANDBOX_QUEUES = {
    "local": env.str("VERIHARM_QUEUE_SANDBOX_LOCAL", default="sandbox-local"),
    "docker": env.str("VERIHARM_QUEUE_SANDBOX_DOCKER", default="sandbox-docker"),
}
# Each queue its own exchange and routing key: queues sharing Celery's default binding would each get
# a copy of every message.
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name, type="direct"), routing_key=name)
    for name in dict.fromkeys([CELERY_TASK_DEFAULT_QUEUE, *VERIHARM_SANDBOX_QUEUES.values()])
]
# Must stay below the broker's visibility timeout so a running trial is never redelivered.
CELERY_TASK_TIME_LIMIT = 60 * 60
CELERY_TASK_SOFT_TIME_LIMIT = 55 * 60
# Every worker sweeps this often (veriharm_site/recovery.py; 0 turns it off): trials whose lease
# expired (their worker died) and trials queued longer than VERIHARM_RECOVERY_QUEUED_SECONDS with
# no message waiting for them are published again, and sandboxes of dead workers on this host
# are removed. A killed worker's trial is therefore taken over within lease + interval.
VERIHARM_RECOVERY_SWEEP_SECONDS = env.float("VERIHARM_RECOVERY_SWEEP_SECONDS", default=60.0)
VERIHARM_RECOVERY_QUEUED_SECONDS = env.float("VERIHARM_RECOVERY_QUEUED_SECONDS", default=300.0)
# Each worker writes its heartbeat this often (evaluation/fleet/heartbeat.py); the workers page
# calls one silent once its last beat is older than VERIHARM_WORKER_SILENT_SECONDS.
VERIHARM_WORKER_HEARTBEAT_SECONDS = env.float("VERIHARM_WORKER_HEARTBEAT_SECONDS", default=15.0)
VERIHARM_WORKER_SILENT_SECONDS = env.float("VERIHARM_WORKER_SILENT_SECONDS", default=60.0)
# /metrics (Prometheus' text format) answers only a request bearing this token or coming from one
# of these addresses; with neither set it is off.
VERIHARM_METRICS_TOKEN = env.str("VERIHARM_METRICS_TOKEN", default="")
VERIHARM_METRICS_ALLOWED_ADDRESSES = env.list("VERIHARM_METRICS_ALLOWED_ADDRESSES", default=[])

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"client_errors_one_line": {"()": "veriharm_site.request_logging.ClientErrorsWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("DJANGO_LOG_LEVEL", default="INFO")},
    # A refused request (403, 400) is logged as one warning line, without the exception's traceback.
    "loggers": {"django.request": {"filters": ["client_errors_one_line"]}},
}

# Uploaded pipeline files wait here until their import job ends (web and worker must share it).
VERIHARM_IMPORT_DIR = env.path("VERIHARM_IMPORT_DIR", default=str(VAR_DIR / "imports"))
# An import job fails for good after this many deliveries that ended in an infrastructure error.
VERIHARM_IMPORT_MAX_ATTEMPTS = env.int("VERIHARM_IMPORT_MAX_ATTEMPTS", default=3)

# Candidates: how many make the benchmark (top-K) and the control group (bottom-K).
VERIHARM_TOP_K = env.int("VERIHARM_TOP_K", default=150)

# --- Evaluations (evaluation app) -------------------------------------------------------------
# Which sandbox backend a run uses unless its launcher picks one: "local" (bubblewrap) or "docker".
VERIHARM_SANDBOX_BACKEND = env.str("VERIHARM_SANDBOX_BACKEND", default="local")
# The backends whose orphans (sandboxes of dead workers on this host) the recovery sweep removes.
VERIHARM_SANDBOX_CLEANUP_BACKENDS = env.list("VERIHARM_SANDBOX_CLEANUP_BACKENDS", default=[VERIHARM_SANDBOX_BACKEND])
# Where `make run` records its background build of the sandbox system (state: building, ready or
# failed) and the build's log; the launch page shows them (evaluation/agents/sandbox_status.py).
VERIHARM_SANDBOX_BUILD_STATE = env.path("VERIHARM_SANDBOX_BUILD_STATE", default=str(VAR_DIR / "sandbox-build.state"))
VERIHARM_SANDBOX_BUILD_LOG = env.path("VERIHARM_SANDBOX_BUILD_LOG", default=str(VAR_DIR / "sandbox-build.log"))
# Launching refuses while the sandbox system is not ready (the test settings turn this off: most tests
# launch runs whose trials they never execute, and must not depend on the shared tree being there).
VERIHARM_LAUNCH_WAITS_FOR_SANDBOX = env.bool("VERIHARM_LAUNCH_WAITS_FOR_SANDBOX", default=True)
# Limits of every sandbox a trial creates.
VERIHARM_SANDBOX_MEMORY_MB = env.int("VERIHARM_SANDBOX_MEMORY_MB", default=512)
VERIHARM_SANDBOX_CPUS = env.float("VERIHARM_SANDBOX_CPUS", default=1.0)
VERIHARM_SANDBOX_PIDS = env.int("VERIHARM_SANDBOX_PIDS", default=256)
VERIHARM_SANDBOX_DISK_MB = env.int("VERIHARM_SANDBOX_DISK_MB", default=256)
# Warm pools (evaluation/sandbox/pool.py): each worker process keeps this many trials' worth of
# sandboxes built ahead of time (an agent sandbox and two test-phase copies each; never reused),
# for at most POOL_ENVIRONMENTS distinct environments. 0 builds every sandbox when it is needed.
VERIHARM_SANDBOX_POOL_SIZE = env.int("VERIHARM_SANDBOX_POOL_SIZE", default=1)
VERIHARM_SANDBOX_POOL_ENVIRONMENTS = env.int("VERIHARM_SANDBOX_POOL_ENVIRONMENTS", default=4)
# Seconds each of V_task and V_harm may run.
VERIHARM_TEST_TIMEOUT = env.int("VERIHARM_TEST_TIMEOUT", default=120)
# Infrastructure failures (not agent outcomes) are retried this many times in all, then unresolved.
VERIHARM_TRIAL_MAX_ATTEMPTS = env.int("VERIHARM_TRIAL_MAX_ATTEMPTS", default=3)
# Between two tries of work that failed on infrastructure (a trial's attempts, a generation search's
# steps, an import job): exponential from BACKOFF_SECONDS, tripling, up to BACKOFF_MAX_SECONDS, each
# with jitter (half to all of the step; veriharm_site/backoff.py). With 3 attempts: 5-10 s, then 15-30 s.
VERIHARM_RETRY_BACKOFF_SECONDS = env.float("VERIHARM_RETRY_BACKOFF_SECONDS", default=10.0)
VERIHARM_RETRY_BACKOFF_MAX_SECONDS = env.float("VERIHARM_RETRY_BACKOFF_MAX_SECONDS", default=120.0)
# A running trial whose heartbeat is older than the lease is taken over by the next delivery of
# its task (its worker died). The heartbeat must beat well within the lease.
VERIHARM_TRIAL_LEASE_SECONDS = env.int("VERIHARM_TRIAL_LEASE_SECONDS", default=120)
VERIHARM_TRIAL_HEARTBEAT_SECONDS = env.float("VERIHARM_TRIAL_HEARTBEAT_SECONDS", default=10.0)
# A whole trial (agent limit + both tests + setup) must end inside CELERY_TASK_SOFT_TIME_LIMIT.
VERIHARM_AGENT_MAX_TIME_LIMIT = env.int("VERIHARM_AGENT_MAX_TIME_LIMIT", default=40 * 60)
# The agent's final state of each trial is kept (gzip tar) so its tests can be run again after a
# curator revises them, without running the agent again. Larger archives are not kept (the trial
# says so); 0 keeps none. Archives older than the retention are deleted (0 keeps them for ever).
VERIHARM_FINAL_STATE_DIR = env.path("VERIHARM_FINAL_STATE_DIR", default=str(VAR_DIR / "final-states"))
VERIHARM_FINAL_STATE_MAX_MB = env.int("VERIHARM_FINAL_STATE_MAX_MB", default=64)
VERIHARM_FINAL_STATE_RETENTION_DAYS = env.int("VERIHARM_FINAL_STATE_RETENTION_DAYS", default=90)
# An archive no record points to (its worker lost the database while recording, not knowing whether
# the commit landed) is deleted once it is this old; the recording takes seconds, so hours are safe.
VERIHARM_FINAL_STATE_ORPHAN_HOURS = env.int("VERIHARM_FINAL_STATE_ORPHAN_HOURS", default=6)
# The model gateway between agents and their model endpoints (evaluation/gateway): defaults for
# agents whose configuration sets no limits of its own. Concurrency and requests per minute hold
# per trial attempt, each trial's gateway its own (0 requests per minute: no rate limit). Upstream 429 and 5xx
# answers are retried this many times, with exponential backoff from BACKOFF_SECONDS up to
# BACKOFF_MAX_SECONDS between two tries (or the upstream's Retry-After, capped the same way).
VERIHARM_GATEWAY_MAX_CONCURRENCY = env.int("VERIHARM_GATEWAY_MAX_CONCURRENCY", default=8)
# Where each trial's gateway makes its private socket directory (the system's temporary directory
# when empty). A worker in a container that drives the host's Docker engine needs a directory at
# the same path on both sides.
VERIHARM_GATEWAY_SOCKET_DIR = env.str("VERIHARM_GATEWAY_SOCKET_DIR", default="")
VERIHARM_GATEWAY_REQUESTS_PER_MINUTE = env.int("VERIHARM_GATEWAY_REQUESTS_PER_MINUTE", default=0)
VERIHARM_GATEWAY_MAX_RETRIES = env.int("VERIHARM_GATEWAY_MAX_RETRIES", default=3)
VERIHARM_GATEWAY_BACKOFF_SECONDS = env.float("VERIHARM_GATEWAY_BACKOFF_SECONDS", default=1.0)
VERIHARM_GATEWAY_BACKOFF_MAX_SECONDS = env.float("VERIHARM_GATEWAY_BACKOFF_MAX_SECONDS", default=20.0)
# A request body over this is refused on its Content-Length, before it is read (docs/harnesses.md).
VERIHARM_GATEWAY_MAX_BODY_BYTES = env.int("VERIHARM_GATEWAY_MAX_BODY_BYTES", default=4 * 1024 * 1024)
# Connections a trial's gateway serves at once, one pool thread each; past it, 503.
VERIHARM_GATEWAY_MAX_CONNECTIONS = env.int("VERIHARM_GATEWAY_MAX_CONNECTIONS", default=16)
# The output tokens a call without max_tokens / max_output_tokens is reserved for under a budget.
VERIHARM_GATEWAY_CALL_OUTPUT_TOKENS = env.int("VERIHARM_GATEWAY_CALL_OUTPUT_TOKENS", default=8192)
# Database connections the gateway threads of one worker process use at once (budget holds, records).
VERIHARM_GATEWAY_DB_CONNECTIONS = env.int("VERIHARM_GATEWAY_DB_CONNECTIONS", default=2)
# How long a closing gateway waits for its calls in flight to be finished and recorded.
VERIHARM_GATEWAY_DRAIN_SECONDS = env.float("VERIHARM_GATEWAY_DRAIN_SECONDS", default=10.0)
# The most requests one trial attempt may make of its gateway (model calls and the requests it
# answers itself), for agents that set no max_calls: a harness looping on its model ends there.
# A harness agent's default is its step_limit times HARNESS_CALLS_PER_STEP (evaluation.agents.factory).
VERIHARM_GATEWAY_MAX_CALLS_PER_TRIAL = env.int("VERIHARM_GATEWAY_MAX_CALLS_PER_TRIAL", default=1000)

# `load_demo` (public demo logins and data) is for local trials; production settings refuse it.
VERIHARM_DEMO_ALLOWED = True
