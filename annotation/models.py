"""Human validation studies (paper section 3.2): blind labels of sampled top-K and bottom-K candidates."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from candidates.models import Candidate

QUESTIONS = ("c1", "c2", "c3")


class StratifyBy(models.TextChoices):
    NONE = "", "No stratification"
    PERTURBATION = "perturbation", "Perturbation type"
    RISK_CATEGORY = "risk_category", "Risk category"
    TARGET_AGENT = "target_agent", "Target agent"
    PROPOSER = "proposer", "Proposer"


class Group(models.TextChoices):
    TOP = "top", "Top-K (predicted valid)"
    BOTTOM = "bottom", "Bottom-K (predicted invalid)"


class StudyStatus(models.TextChoices):
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"


class Study(models.Model):
    """A sample of n top-K and n bottom-K candidates, each to be labelled by `annotators_per_item` people.

    The sampling inputs are kept with the study so that the same inputs give the same sample, and
    `strata_report` keeps what the sampler saw (pool size, exact quota, allocation per stratum),
    because the ranking may change after later imports.
    """

    name = models.CharField(max_length=200, unique=True, help_text="Annotators see this name.")
    description = models.TextField(blank=True, default="", help_text="For curators only.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, choices=StudyStatus.choices, default=StudyStatus.OPEN)
    closed_at = models.DateTimeField(null=True, blank=True)
    seed = models.PositiveIntegerField()
    top_k = models.PositiveIntegerField()
    per_group = models.PositiveIntegerField()
    stratify_by = models.CharField(max_length=32, choices=StratifyBy.choices, blank=True, default="")
    annotators_per_item = models.PositiveSmallIntegerField(default=3)
    claim_timeout_minutes = models.PositiveIntegerField(default=30)
    ranked_at_sampling = models.PositiveIntegerField(default=0)
    strata_report = models.JSONField(default=dict, blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="StudyMember", related_name="annotation_studies")

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "studies"
        permissions = [
            ("annotate", "Can label study items"),
            ("manage_studies", "Can create, close and read the results of annotation studies"),
            ("export_identities", "Can export labels with the annotators' identities"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(annotators_per_item__gte=1), name="study_annotators_positive"),
            models.CheckConstraint(condition=Q(per_group__gte=1), name="study_per_group_positive"),
            models.CheckConstraint(condition=Q(top_k__gte=1), name="study_top_k_positive"),
            models.CheckConstraint(condition=Q(claim_timeout_minutes__gte=1), name="study_timeout_positive"),
            # The services' MAX_CLAIM_TIMEOUT_MINUTES (30 days).
            models.CheckConstraint(condition=Q(claim_timeout_minutes__lte=43200), name="study_timeout_at_most_30_days"),
            models.CheckConstraint(condition=Q(stratify_by__in=StratifyBy.values), name="study_known_stratify_by"),
            models.CheckConstraint(condition=Q(status__in=StudyStatus.values), name="study_known_status"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_open(self) -> bool:
        return self.status == StudyStatus.OPEN


class StudyMember(models.Model):
    """An annotator taking part in a study, under a pseudonym used in results and exports."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="study_memberships")
    pseudonym = models.CharField(max_length=20)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "pseudonym"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="member_once_per_study"),
            models.UniqueConstraint(fields=["study", "pseudonym"], name="member_pseudonym_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.pseudonym} in {self.study_id}"


class StudyItem(models.Model):
    """One sampled candidate. Annotators know it only by `number` and `token`, which were drawn at
    random, so neither says which group it came from; group, rank and Q are frozen at sampling."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    candidate = models.ForeignKey(Candidate, on_delete=models.PROTECT, related_name="study_items")
    number = models.PositiveIntegerField()
    token = models.CharField(max_length=24, unique=True)
    group = models.CharField(max_length=10, choices=Group.choices)
    stratum = models.CharField(max_length=200, blank=True, default="")
    rank_at_sampling = models.PositiveIntegerField()
    quality_at_sampling = models.FloatField()
    revision_at_sampling = models.PositiveIntegerField()

    class Meta:
        ordering = ["study", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "candidate"], name="item_candidate_once_per_study"),
            models.UniqueConstraint(fields=["study", "number"], name="item_number_unique"),
            models.CheckConstraint(condition=Q(group__in=Group.values), name="item_known_group"),
            models.CheckConstraint(condition=Q(number__gte=1), name="item_number_positive"),
        ]

    def __str__(self) -> str:
        return f"item {self.number} of study {self.study_id}"


class Assignment(models.Model):
    """An annotator's claim on an item and, once submitted, their label.

    One row per (item, annotator) is the database's guarantee that nobody labels an item twice;
    the partial unique index keeps each annotator to one open claim per study. An unsubmitted row
    past `expires_at` no longer holds a place: the claim service counts only submitted rows and
    live claims, under a lock on the item row, so an item never gets more than its annotator count.
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments")
    claimed_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    c1 = models.BooleanField(null=True, verbose_name="C1 benign and realistic")
    c2 = models.BooleanField(null=True, verbose_name="C2 harm unintended")
    c3 = models.BooleanField(null=True, verbose_name="C3 harm test correct")
    comment = models.TextField(blank=True, default="")
    seconds_spent = models.FloatField(default=0)
    revisions = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["item", "submitted_at"]
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="assignment_one_per_item_and_annotator"),
            models.UniqueConstraint(
                fields=["study", "annotator"],
                condition=Q(submitted_at__isnull=True),
                name="assignment_one_open_claim_per_study",
            ),
            models.CheckConstraint(
                condition=Q(submitted_at__isnull=True)
                | Q(c1__isnull=False, c2__isnull=False, c3__isnull=False),
                name="assignment_submitted_has_answers",
            ),
            models.CheckConstraint(condition=Q(seconds_spent__gte=0), name="assignment_time_not_negative"),
            models.CheckConstraint(condition=Q(expires_at__gte=models.F("claimed_at")), name="assignment_expiry_after_claim"),
        ]
        indexes = [
            models.Index(fields=["study", "annotator", "submitted_at"], name="assignment_study_annot_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator_id} on {self.item_id}"

    @property
    def submitted(self) -> bool:
        return self.submitted_at is not None

    @property
    def valid(self) -> bool | None:
        """Valid = C1 and C2 and C3 (equation 6), once all three are answered."""
        if self.c1 is None or self.c2 is None or self.c3 is None:
            return None
        return self.c1 and self.c2 and self.c3
