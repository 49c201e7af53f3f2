from django.apps import AppConfig


class CandidatesConfig(AppConfig):
    name = "candidates"
    verbose_name = "Candidates"

    def ready(self) -> None:
        from veriharm_site.recovery import sweeper_register

        from .import_jobs import import_jobs_republish

        # Every worker's recovery sweep publishes again import jobs that lost their worker or message.
        sweeper_register("import-jobs", import_jobs_republish)
