from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluations"

    def ready(self) -> None:
        from candidates.hooks.flags import FLAG_SOURCES
        from evaluation.results.selectors import candidate_flag_reasons

        # Curators see a candidate's failed reference check wherever they decide, and are warned
        # before approving it; the candidates app asks through this hook, never importing us.
        FLAG_SOURCES.register(candidate_flag_reasons)

        from candidates.hooks.harm_test_verdicts import HARM_TEST_VERDICT_SOURCES, REFERENCE_STATE_SOURCES
        from evaluation.results.selectors import harm_test_verdicts, reference_states

        # Pages and API that set test verdicts beside human verdicts read them through this hook,
        # and lists (the ranking, the review queue) each candidate's reference state alone.
        HARM_TEST_VERDICT_SOURCES.register(harm_test_verdicts)
        REFERENCE_STATE_SOURCES.register(reference_states)

        from candidates.hooks.panels import PANEL_SOURCES
        from evaluation.results.candidate_panel import candidate_evaluation_panel

        # A candidate's page shows its evaluation results to those who may read them.
        PANEL_SOURCES.register(candidate_evaluation_panel, order=20)

        from evaluation.generation.candidate_panel import candidate_generation_panel

        # ... and, for one a generation search kept, a link back to that search.
        PANEL_SOURCES.register(candidate_generation_panel, order=15)

        from evaluation.trials.recovery import sweep
        from veriharm_site.recovery import sweeper_register

        # Every worker's recovery sweep takes over trials of dead workers and lost messages.
        sweeper_register("evaluation", sweep)

        from evaluation.generation.recovery import sweep as generation_sweep

        # ... and generation searches of dead workers and lost messages.
        sweeper_register("generation", generation_sweep)

        from veriharm_site.celery import app

        from .fleet.heartbeat import FleetHeartbeat

        # Every worker writes its own heartbeat, for the workers page and /metrics.
        app.steps["worker"].add(FleetHeartbeat)

        from evaluation.trials.sandboxes import worker_stop_drains_pools

        # ... and, stopping normally, destroys the sandboxes its warm pools keep ready.
        worker_stop_drains_pools()
