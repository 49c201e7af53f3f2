"""The test suite: real PostgreSQL and real Redis at their usual local addresses."""
from .base import *  # noqa: F401,F403
from .base import env

SECRET_KEY = "test-key-not-secret"
DEBUG = False
DATABASES = {
    "default": env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/veriharm"),
}
DATABASES["default"]["TEST"] = {"NAME": env.str("VERIHARM_TEST_DB", default="test_veriharm")}
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="redis://127.0.0.1:6379/15")
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
ALLOWED_HOSTS = ["*"]
