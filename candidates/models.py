"""What the construction pipeline produced: source tasks, candidates, judge scores, searches."""
from django.db import models
from django.db.models import Q

SCORE_KEYS = (
    "harm_test_correctness",
    "harm_unintendedness",
    "harm_test_correspondence",
    "harm_feasibility",
    "perturbation_stealth",
)


class Perturbation(models.TextChoices):
    UNDERSPECIFICATION = "underspecification", "Underspecification"
    DELEGATION_OF_CONTROL = "delegation_of_control", "Delegation of control"


class SourceTask(models.Model):
    """The unmodified seed task t_seed, its test V_task and its environment."""

    external_id = models.CharField(max_length=200, unique=True)
    instruction = models.TextField()
    task_test = models.TextField()
    environment = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["external_id"]

    def __str__(self) -> str:
        return self.external_id


class Candidate(models.Model):
    """A benchmark candidate c = (t~, V_task, V_harm).

    `quality` is Q(c), the mean of the judges' sums, and `rank` its position in
    the ranking (Q descending, then id); both are written by the import service
    in the same transaction as the judgements, so ranking is an indexed read.
    """

    external_id = models.CharField(max_length=200, unique=True)
    source_task = models.ForeignKey(SourceTask, on_delete=models.PROTECT, related_name="candidates")
    instruction = models.TextField()
    harm_test = models.TextField()
    perturbation = models.CharField(max_length=32, choices=Perturbation.choices)
    target_agent = models.CharField(max_length=200)
    proposer = models.CharField(max_length=200)
    iteration = models.PositiveSmallIntegerField()
    harm_summary = models.TextField(blank=True, default="")
    risk_category = models.CharField(max_length=100, blank=True, default="")
    references = models.JSONField(default=dict, blank=True)
    twin = models.JSONField(null=True, blank=True)
    extra = models.JSONField(default=dict, blank=True)
    # sha256 of the canonical JSON of the imported line: an identical re-import is detected without a diff.
    content_hash = models.CharField(max_length=64)
    # Words the perturbation added to t_seed: searched instead of the whole instruction, whose
    # full-text index would cost more than the rest of an import together.
    added_text = models.TextField(blank=True, default="")
    # Bumped by every curator edit of the instruction or harm test; results of an older revision are stale.
    revision = models.PositiveIntegerField(default=1)
    quality = models.FloatField(null=True, blank=True)
    rank = models.PositiveIntegerField(null=True, blank=True)
    imported_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["rank", "external_id"]
        permissions = [
            ("view_ranking", "Can see the ranking, judge scores and search provenance"),
            ("import_pipeline", "Can import and export pipeline output"),
            ("curate", "Can approve candidates and freeze releases"),
        ]
        indexes = [
            models.Index(fields=["rank"], name="candidate_rank_idx"),
            models.Index(fields=["-quality", "external_id"], name="candidate_quality_idx"),
            models.Index(fields=["perturbation", "rank"], name="candidate_pert_rank_idx"),
            models.Index(fields=["risk_category", "rank"], name="candidate_risk_rank_idx"),
            models.Index(fields=["target_agent", "rank"], name="candidate_agent_rank_idx"),
            models.Index(fields=["proposer", "rank"], name="candidate_proposer_rank_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(perturbation__in=Perturbation.values), name="candidate_known_perturbation"
            ),
            models.CheckConstraint(condition=Q(iteration__gte=1, iteration__lte=20), name="candidate_iteration_range"),
            models.CheckConstraint(
                condition=Q(quality__isnull=True) | Q(quality__gte=5, quality__lte=25), name="candidate_quality_range"
            ),
        ]

    def __str__(self) -> str:
        return self.external_id


class Judgement(models.Model):
    """One judge's five criterion scores (1-5) for one candidate."""

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="judgements")
    judge = models.CharField(max_length=200)
    position = models.PositiveSmallIntegerField(default=0, help_text="Order in the imported line")
    harm_test_correctness = models.PositiveSmallIntegerField()
    harm_unintendedness = models.PositiveSmallIntegerField()
    harm_test_correspondence = models.PositiveSmallIntegerField()
    harm_feasibility = models.PositiveSmallIntegerField()
    perturbation_stealth = models.PositiveSmallIntegerField()
    rationale = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["candidate", "position"]
        constraints = [
            models.UniqueConstraint(fields=["candidate", "judge"], name="judgement_one_per_judge"),
            *[
                models.CheckConstraint(condition=Q(**{f"{key}__gte": 1, f"{key}__lte": 5}), name=f"judgement_{key}_1_5")
                for key in SCORE_KEYS
            ],
        ]

    @property
    def scores(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in SCORE_KEYS}

    @property
    def total(self) -> int:
        return sum(self.scores.values())

    def __str__(self) -> str:
        return f"{self.judge} on {self.candidate_id}"


class Search(models.Model):
    """One rollout-guided search for a (target agent, source task, proposer) triple."""

    source_task_external_id = models.CharField(max_length=200)
    target_agent = models.CharField(max_length=200)
    proposer = models.CharField(max_length=200)
    budget = models.PositiveSmallIntegerField()
    candidate = models.ForeignKey(
        Candidate, on_delete=models.PROTECT, null=True, blank=True, related_name="searches"
    )
    succeeded = models.BooleanField()
    content_hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["source_task_external_id", "target_agent", "proposer"]
        constraints = [
            models.UniqueConstraint(
                fields=["source_task_external_id", "target_agent", "proposer"], name="search_one_per_triple"
            ),
            models.CheckConstraint(condition=Q(budget__gte=1), name="search_budget_positive"),
            models.CheckConstraint(
                condition=Q(succeeded=False) | Q(candidate__isnull=False), name="search_success_has_candidate"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.target_agent} x {self.source_task_external_id} by {self.proposer}"


class SearchAttempt(models.Model):
    search = models.ForeignKey(Search, on_delete=models.CASCADE, related_name="attempts")
    iteration = models.PositiveSmallIntegerField()
    task_passed = models.BooleanField()
    harm_detected = models.BooleanField()

    class Meta:
        ordering = ["search", "iteration"]
        constraints = [
            models.UniqueConstraint(fields=["search", "iteration"], name="attempt_one_per_iteration"),
            models.CheckConstraint(condition=Q(iteration__gte=1), name="attempt_iteration_positive"),
        ]
