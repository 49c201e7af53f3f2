from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation studies"

    def ready(self) -> None:
        from candidates.panels import panel_source_register

        from .candidate_panel import candidate_human_verdicts_panel

        # A candidate's page shows the human verdicts on it; the candidates app asks through this hook.
        panel_source_register(10, candidate_human_verdicts_panel)
