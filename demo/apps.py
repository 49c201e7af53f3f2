from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "demo"
    verbose_name = "Demo"

    def ready(self) -> None:
        from evaluation.generation.scripted import scripted_catalogue_register

        from .scripted_catalogue import scripted_catalogue

        # The scripted demo proposer proposes from the demo's checked candidates.
        scripted_catalogue_register(scripted_catalogue())

        from evaluation.runs.waiting_runs import WAITING_RUNS_SOURCES

        from .runs import demo_runs_pending

        # The launch page says the demo runs start by themselves once the sandbox system is built.
        WAITING_RUNS_SOURCES.register(demo_runs_pending)

        from evaluation.agents.upstreams import upstream_transport_register

        from .native.runs import MODEL_HOST, placeholder_key_ensure, scripted_model_transport
        from .users import demo_refusal

        # The native harness demo's agents name the scripted demo model as their upstream: each
        # trial's gateway answers them in the worker, holding the demo's placeholder key. Not where
        # demo data is refused (production settings): nothing there names it.
        if demo_refusal() is None:
            upstream_transport_register(MODEL_HOST, scripted_model_transport)
            placeholder_key_ensure()
