from django.apps import AppConfig
from django.db.models.signals import post_migrate


class VeriharmSiteConfig(AppConfig):
    name = "veriharm_site"
    verbose_name = "VeriHarm Review"

    def ready(self) -> None:
        from .roles import ensure_roles

        # Runs after every app's migrations; each run grants whatever permissions exist by then.
        post_migrate.connect(lambda **kwargs: ensure_roles(), dispatch_uid="veriharm_ensure_roles", weak=False)
