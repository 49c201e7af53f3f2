from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "demo"
    verbose_name = "Demo"

    def ready(self) -> None:
        from evaluation.generation.scripted import scripted_catalogue_register

        from .scripted_catalogue import scripted_catalogue

        # The scripted demo proposer proposes from the demo's checked candidates.
        scripted_catalogue_register(scripted_catalogue())

        from evaluation.waiting_runs import waiting_runs_source_register

        from .runs import demo_runs_pending

        # The launch page says the demo runs start by themselves once the sandbox system is built.
        waiting_runs_source_register(demo_runs_pending)

