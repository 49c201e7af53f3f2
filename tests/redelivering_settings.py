"""Test settings whose broker would deliver a running task a second time: a worker must refuse them."""

from veriharm_site.settings.test import *  # noqa: F401,F403

CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_TIME_LIMIT = 3600
