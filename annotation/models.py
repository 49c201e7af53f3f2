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
    # The items of a study drawn from a filter of the ranking or from chosen rows: no prediction.
    SELECTED = "selected", "Filtered or chosen (no predicted validity)"


class DrawnFrom(models.TextChoices):
    GROUPS = "groups", "n of the top-K and n of the bottom-K"
    FILTER = "filter", "A sample of the candidates a filter of the ranking matches"
    CHOSEN = "chosen", "Chosen candidates"


class Routing(models.TextChoices):
    FIXED = "fixed", "Every item gets the same number of annotators"
    TWO_PLUS_ONE = "two_plus_one", "2+1: two annotators, a third only when they disagree"


class StudyStatus(models.TextChoices):
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"


class DemoStudy(models.TextChoices):
    """What is synthetic about a study `manage.py load_demo` made, as its pages say it."""

    NONE = "", "Not a demo study"
    VOTES = "votes", "Demo study: votes cast by scripted demo annotators, on generated and hand-checked demo candidates"
    CANDIDATES = "candidates", "Demo study: its candidates are generated demo data (judge scores and Q included)"


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
    drawn_from = models.CharField(max_length=10, choices=DrawnFrom.choices, default=DrawnFrom.GROUPS)
    # The ranking's query parameters a filtered study was drawn with (empty otherwise).
    drawn_filter = models.JSONField(default=dict, blank=True)
    routing = models.CharField(max_length=16, choices=Routing.choices, default=Routing.FIXED)
    demo = models.CharField(max_length=16, choices=DemoStudy.choices, blank=True, default=DemoStudy.NONE)
    guidelines = models.TextField(
        blank=True,
        default="",
        help_text="Shown to annotators before their first item and one key (G) away after: worked examples.",
    )
    gold_rate = models.FloatField(
        default=0.0, help_text="The share of each annotator's items drawn from the gold items, while any are left."
    )
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="StudyMember", related_name="annotation_studies")

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "studies"
        permissions = [
            ("annotate", "Can label study items"),
            ("manage_studies", "Can create, close and read the results of annotation studies"),
            ("view_results", "Can read the results of annotation studies"),
            ("export_identities", "Can export labels with the annotators' identities"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(annotators_per_item__gte=1), name="study_annotators_positive"),
            models.CheckConstraint(condition=Q(demo__in=DemoStudy.values), name="study_known_demo"),
            models.CheckConstraint(condition=Q(per_group__gte=1), name="study_per_group_positive"),
            models.CheckConstraint(condition=Q(top_k__gte=1), name="study_top_k_positive"),
            models.CheckConstraint(condition=Q(claim_timeout_minutes__gte=1), name="study_timeout_positive"),
            # The services' MAX_CLAIM_TIMEOUT_MINUTES (30 days).
            models.CheckConstraint(condition=Q(claim_timeout_minutes__lte=43200), name="study_timeout_at_most_30_days"),
            models.CheckConstraint(condition=Q(stratify_by__in=StratifyBy.values), name="study_known_stratify_by"),
            models.CheckConstraint(condition=Q(status__in=StudyStatus.values), name="study_known_status"),
            models.CheckConstraint(condition=Q(routing__in=Routing.values), name="study_known_routing"),
            models.CheckConstraint(condition=Q(drawn_from__in=DrawnFrom.values), name="study_known_drawn_from"),
            models.CheckConstraint(condition=Q(gold_rate__gte=0, gold_rate__lte=1), name="study_gold_rate_share"),
            # 2+1 routing means two annotators per item, and three on a disagreement.
            models.CheckConstraint(
                condition=~Q(routing=Routing.TWO_PLUS_ONE) | Q(annotators_per_item=2), name="study_two_plus_one_has_two"
            ),
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
    guidelines_read_at = models.DateTimeField(null=True, blank=True)

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
    # A gold item's known answers, set by a curator; never shown to annotators.
    gold_c1 = models.BooleanField(null=True, blank=True)
    gold_c2 = models.BooleanField(null=True, blank=True)
    gold_c3 = models.BooleanField(null=True, blank=True)

    class Meta:
        ordering = ["study", "number"]
        constraints = [
            models.CheckConstraint(
                condition=Q(gold_c1__isnull=True, gold_c2__isnull=True, gold_c3__isnull=True)
                | Q(gold_c1__isnull=False, gold_c2__isnull=False, gold_c3__isnull=False),
                name="item_gold_all_or_none",
            ),
            models.UniqueConstraint(fields=["study", "candidate"], name="item_candidate_once_per_study"),
            models.UniqueConstraint(fields=["study", "number"], name="item_number_unique"),
            models.CheckConstraint(condition=Q(group__in=Group.values), name="item_known_group"),
            models.CheckConstraint(condition=Q(number__gte=1), name="item_number_positive"),
        ]

    def __str__(self) -> str:
        return f"item {self.number} of study {self.study_id}"

    @property
    def is_gold(self) -> bool:
        return self.gold_c1 is not None


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
                condition=Q(submitted_at__isnull=True) | Q(c1__isnull=False, c2__isnull=False, c3__isnull=False),
                name="assignment_submitted_has_answers",
            ),
            models.CheckConstraint(condition=Q(seconds_spent__gte=0), name="assignment_time_not_negative"),
            models.CheckConstraint(
                condition=Q(expires_at__gte=models.F("claimed_at")), name="assignment_expiry_after_claim"
            ),
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


class ItemSkip(models.Model):
    """An annotator set an item aside, optionally flagging it as unclear with a reason. The claim
    is given up (the place goes back to the pool); the item stays out of the annotator's own order
    until they come back to their skipped items (`returned_at`). The flag is kept for curators."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="skips")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="skips")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    skipped_at = models.DateTimeField()
    returned_at = models.DateTimeField(null=True, blank=True)
    unclear = models.BooleanField(default=False)
    reason = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["item", "skipped_at"]
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="skip_once_per_item_and_annotator"),
            models.CheckConstraint(condition=Q(unclear=False) | ~Q(reason=""), name="skip_unclear_has_reason"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator_id} skipped {self.item_id}"


class LabelChange(models.Model):
    """The answers an annotator replaced when revising a label: revisions overwrite the assignment
    (which results read) and keep what was there before here, so nothing is lost."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="history")
    c1 = models.BooleanField()
    c2 = models.BooleanField()
    c3 = models.BooleanField()
    comment = models.TextField(blank=True, default="")
    answered_at = models.DateTimeField()
    replaced_at = models.DateTimeField()

    class Meta:
        ordering = ["assignment", "replaced_at"]

    def __str__(self) -> str:
        return f"earlier answer of assignment {self.assignment_id}"


class Adjudication(models.Model):
    """A curator's final label on a disputed item, with the reason; results show it beside the
    raw majority, never instead of it."""

    item = models.OneToOneField(StudyItem, on_delete=models.CASCADE, related_name="adjudication")
    c1 = models.BooleanField()
    c2 = models.BooleanField()
    c3 = models.BooleanField()
    reason = models.TextField()
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    decided_at = models.DateTimeField()

    class Meta:
        constraints = [models.CheckConstraint(condition=~Q(reason=""), name="adjudication_has_reason")]

    @property
    def valid(self) -> bool:
        return self.c1 and self.c2 and self.c3

    def __str__(self) -> str:
        return f"adjudication of item {self.item_id}"


class LabellingPreferences(models.Model):
    """How one person likes the labelling page, kept with them rather than with a browser."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="labelling_preferences"
    )
    # WCAG 2.1.4: single-character shortcuts can be turned off (speech input types letters).
    single_key_shortcuts = models.BooleanField(default=True)

    class Meta:
        verbose_name_plural = "labelling preferences"

    def __str__(self) -> str:
        return f"labelling preferences of user {self.user_id}"
