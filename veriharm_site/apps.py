from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_migrate


class VeriharmSiteConfig(AppConfig):
    name = "veriharm_site"
    verbose_name = "VeriHarm Review"

    def ready(self) -> None:
        from django.urls import register_converter

        from .converters import NumberConverter
        from .roles import ensure_roles

        register_converter(NumberConverter, "number")

        # Runs after every app's migrations; each run grants whatever permissions exist by then.
        post_migrate.connect(lambda **kwargs: ensure_roles(), dispatch_uid="veriharm_ensure_roles", weak=False)


@checks.register(checks.Tags.compatibility)
def broker_settings_check(app_configs: Sequence[AppConfig] | None, **kwargs: Any) -> list[checks.CheckMessage]:
    """`manage.py check` (and every runserver) says when the broker could redeliver a running task."""
    from django.conf import settings

    from .recovery import broker_settings_problems

    return [checks.Error(problem, id="veriharm.E001") for problem in broker_settings_problems(settings)]
