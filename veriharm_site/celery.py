import os

from celery import Celery

from .recovery import RecoverySweep

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "veriharm_site.settings.local")

app = Celery("veriharm")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Every worker sweeps for work a dead worker or a lost message left behind, and refuses to start
# when its broker could deliver a running task twice (veriharm_site/recovery.py).
app.steps["worker"].add(RecoverySweep)
