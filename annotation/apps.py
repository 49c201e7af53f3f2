from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation studies"

    def ready(self) -> None:
        from candidates.hooks.human_verdicts import HUMAN_MAJORITY_SOURCES, STUDY_SOURCES, StudySource
        from candidates.hooks.panels import PANEL_SOURCES
        from candidates.hooks.ranking_actions import RANKING_ACTIONS

        from .studies.candidate_panel import candidate_human_verdicts_panel
        from .studies.human_majority import candidates_human_majorities, studies_for_filter, study_candidates
        from .studies.ranking_actions import STUDY_FROM_RANKING

        # A candidate's page shows the human verdicts on it; the candidates app asks through this hook.
        PANEL_SOURCES.register(candidate_human_verdicts_panel, order=10)
        # Approving or freezing a candidate humans judged invalid asks for an acknowledgement; the
        # candidates app reads the majority through this hook.
        HUMAN_MAJORITY_SOURCES.register(candidates_human_majorities)
        # The review queue filters by study (its human majority, votes and flags are columns there),
        # and a run may evaluate a study's items: both read the studies and their candidates through
        # this hook, never annotation's models.
        STUDY_SOURCES.register(StudySource(studies_for_filter, study_candidates))
        # The ranking page offers a study drawn from its filter or its ticked rows.
        RANKING_ACTIONS.register(STUDY_FROM_RANKING)
