import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "veriharm_site.settings.local")

app = Celery("veriharm")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
