"""What the construction pipeline produced: source tasks, candidates, judge scores, searches."""

from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from veriharm_site.refusals import Conflict

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
    # The id and the words the perturbation added to t_seed, which the ranking's search reads
    # (one trigram index); a full-text index of whole instructions would cost more than the
    # rest of an import together.
    search_text = models.TextField(blank=True, default="")
    # Bumped by every curator edit of the instruction or harm test; results of an older revision are stale.
    revision = models.PositiveIntegerField(default=1)
    quality = models.FloatField(null=True, blank=True)
    rank = models.PositiveIntegerField(null=True, blank=True)
    # Synthetic (`candidates.pool.synthetic`): made by `manage.py load_demo`, or kept by a generation run
    # with a scripted proposer or judges; no model produced its judge scores and Q, and the pages say
    # so. Not part of the pipeline line, so re-imports keep it.
    demo = models.BooleanField(default=False, db_default=False)
    # The latest import job (an upload through the pages or the API) whose files held it, so the
    # job's page opens its batch; None for candidates imported otherwise (a command, a generation run).
    import_job = models.ForeignKey(
        "ImportJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="candidates", db_index=False
    )
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
            # Each serves one way of reading the ranking in its order (rank, then id), filtered or not.
            models.Index(fields=["rank", "external_id"], name="candidate_ranking_idx"),
            # The few demo candidates, counted for the pages' banner without reading the pool.
            models.Index(fields=["demo"], condition=Q(demo=True), name="candidate_demo_idx"),
            # An import job's batch in rank order (the ranking filtered by `import_job`).
            models.Index(
                fields=["import_job", "rank", "external_id"],
                condition=Q(import_job__isnull=False),
                name="candidate_import_job_idx",
            ),
            models.Index(fields=["perturbation", "rank", "external_id"], name="candidate_pert_ranking_idx"),
            models.Index(fields=["risk_category", "rank", "external_id"], name="candidate_risk_ranking_idx"),
            models.Index(fields=["target_agent", "rank", "external_id"], name="candidate_agent_ranking_idx"),
            models.Index(fields=["proposer", "rank", "external_id"], name="candidate_proposer_ranking_idx"),
            # The descriptive report counts candidates per (risk category, perturbation), and joins
            # harmful successes to their candidate's cell, from index-only scans of this instead of
            # reading every whole row.
            models.Index(fields=["risk_category", "perturbation", "id"], name="candidate_risk_pert_idx"),
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

    # No index of its own: the unique (candidate, judge) index leads with it and serves every lookup,
    # and a second one would only slow each import's judgement writes.
    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="judgements", db_index=False)
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
    candidate = models.ForeignKey(Candidate, on_delete=models.PROTECT, null=True, blank=True, related_name="searches")
    succeeded = models.BooleanField()
    # The iteration of its harmful success (its last attempt: a search stops there), written by
    # the import with the attempts, which never change after. Table 1 then counts searches in
    # one grouped index-only read instead of reading every attempt.
    first_success = models.PositiveSmallIntegerField(null=True, blank=True)
    content_hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["source_task_external_id", "target_agent", "proposer"]
        indexes = [
            models.Index(fields=["proposer", "target_agent", "budget", "first_success"], name="search_report_idx"),
            # The harmful successes of the descriptive report, by the candidate each one kept.
            models.Index(fields=["candidate"], condition=Q(succeeded=True), name="search_success_candidate_idx"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["source_task_external_id", "target_agent", "proposer"], name="search_one_per_triple"
            ),
            models.CheckConstraint(condition=Q(budget__gte=1), name="search_budget_positive"),
            models.CheckConstraint(
                condition=Q(succeeded=False) | Q(candidate__isnull=False), name="search_success_has_candidate"
            ),
            models.CheckConstraint(
                condition=Q(succeeded=False, first_success__isnull=True)
                | Q(succeeded=True, first_success__gte=1, first_success__lte=F("budget")),
                name="search_first_success_within_budget",
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

    def __str__(self) -> str:
        return f"attempt {self.iteration} of search {self.search_id}"


# --- Curation: decisions, revisions and frozen releases -------------------------------------------


class Verdict(models.TextChoices):
    APPROVE = "approve", "Approve"
    REJECT = "reject", "Reject"


class DecisionReason(models.TextChoices):
    """The short list a curator picks from; the order is the keyboard order (1-5) in the review queue."""

    VALID = "valid", "Valid: a benign request, an unintended harm, a correct harm test"
    HARM_REQUESTED = "harm_requested", "The instruction asks for the harm or gives it away"
    HARM_TEST_WRONG = "harm_test_wrong", "The harm test is wrong or checks an unrelated change"
    UNREALISTIC = "unrealistic", "Not a realistic benign request, or the source task's goal is lost"
    OTHER = "other", "Other (say why in the note)"


# A rejection reason cannot justify an approval and "valid" cannot justify a rejection.
APPROVE_REASONS = (DecisionReason.VALID, DecisionReason.OTHER)
REJECT_REASONS = tuple(r for r in DecisionReason if r != DecisionReason.VALID)


class AppendOnly(Exception):
    """Raised on an attempt to change or delete a row that is kept as history."""


class ReleaseFrozen(Conflict):
    """Raised on an attempt to change or delete a frozen release or one of its items."""


class AppendOnlyQuerySet(models.QuerySet):
    """History rows: bulk updates and deletes would bypass Model.save/delete, so refuse them here too."""

    def update(self, **kwargs: Any) -> int:
        raise AppendOnly(f"{self.model._meta.verbose_name_plural} are history and cannot be changed.")

    def delete(self):
        raise AppendOnly(f"{self.model._meta.verbose_name_plural} are history and cannot be deleted.")


class Decision(models.Model):
    """One curator's approve/reject of a candidate. Append-only: the latest decision is the
    current one, earlier ones stay as history; changing one's mind is a new row."""

    candidate = models.ForeignKey(Candidate, on_delete=models.PROTECT, related_name="decisions")
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    reason = models.CharField(max_length=32, choices=DecisionReason.choices)
    note = models.TextField(blank=True, default="")
    # The revision the curator looked at: an approval of revision 1 says nothing about revision 2's text.
    candidate_revision = models.PositiveIntegerField()
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="decisions")
    decided_at = models.DateTimeField(default=timezone.now)
    # The warning the curator was shown and acknowledged when approving a flagged candidate (its
    # flags in words, e.g. "V_harm passes on the untouched environment"); empty when there was none.
    flag_warning = models.TextField(blank=True, default="")

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["candidate", "-decided_at", "-id"]
        indexes = [models.Index(fields=["candidate", "-decided_at", "-id"], name="decision_latest_idx")]
        constraints = [
            models.CheckConstraint(condition=Q(verdict__in=Verdict.values), name="decision_known_verdict"),
            models.CheckConstraint(
                condition=Q(verdict=Verdict.APPROVE, reason__in=[r.value for r in APPROVE_REASONS])
                | Q(verdict=Verdict.REJECT, reason__in=[r.value for r in REJECT_REASONS]),
                name="decision_reason_fits_verdict",
            ),
            models.CheckConstraint(
                condition=~Q(reason=DecisionReason.OTHER) | ~Q(note=""), name="decision_other_needs_note"
            ),
            models.CheckConstraint(condition=Q(candidate_revision__gte=1), name="decision_revision_positive"),
            # Only an approval is warned against: rejecting a flagged candidate needs no confirmation.
            models.CheckConstraint(
                condition=Q(verdict=Verdict.APPROVE) | Q(flag_warning=""), name="decision_warning_only_on_approval"
            ),
        ]

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnly("A decision is history and cannot be changed; record a new decision instead.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnly("A decision is history and cannot be deleted; record a new decision instead.")

    def __str__(self) -> str:
        return f"{self.get_verdict_display()} {self.candidate_id} ({self.reason})"


class Revision(models.Model):
    """The instruction and harm test of a candidate at one revision.

    Revision 1 is the imported text (no author); it is written when the first change comes (a
    curator's edit or an import in replace mode), so unchanged candidates need no rows. The candidate row always holds the latest
    revision's text and number.
    """

    candidate = models.ForeignKey(Candidate, on_delete=models.PROTECT, related_name="revisions")
    number = models.PositiveIntegerField()
    instruction = models.TextField()
    harm_test = models.TextField()
    reason = models.TextField(blank=True, default="")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="revisions"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["candidate", "number"]
        constraints = [
            models.UniqueConstraint(fields=["candidate", "number"], name="revision_one_per_number"),
            models.CheckConstraint(condition=Q(number__gte=1), name="revision_number_positive"),
            # Every change says why; only the imported original has no reason. Curator edits also
            # name their author; a replacing import has none.
            models.CheckConstraint(condition=Q(number=1) | ~Q(reason=""), name="revision_change_has_reason"),
        ]

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnly("A revision is history and cannot be changed; make a new revision instead.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnly("A revision is history and cannot be deleted.")

    def __str__(self) -> str:
        return f"{self.candidate_id} revision {self.number}"


# Both end up in file and folder names of exports, so they stay within safe characters.
RELEASE_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,99}$"
RELEASE_VERSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9.+_-]{0,49}$"


class _FrozenGuardQuerySet(models.QuerySet):
    """Bulk updates and deletes bypass Model.save/delete; refuse them on frozen rows too."""

    frozen_lookup: str  # the lookup that is False on the rows of a frozen release
    what: str

    def _touches_frozen(self) -> bool:
        return self.filter(**{self.frozen_lookup: False}).exists()

    def update(self, **kwargs: Any) -> int:
        if self._touches_frozen():
            raise ReleaseFrozen(f"{self.what} cannot change.")
        return super().update(**kwargs)

    def delete(self):
        if self._touches_frozen():
            raise ReleaseFrozen(f"{self.what} cannot be deleted.")
        return super().delete()


class ReleaseQuerySet(_FrozenGuardQuerySet):
    frozen_lookup = "frozen_at__isnull"
    what = "A frozen release"


class Release(models.Model):
    """A named, versioned benchmark. A draft has no items; freezing snapshots the approved set
    and from then on nothing about the release may change."""

    name = models.CharField(max_length=100, validators=[RegexValidator(RELEASE_NAME_PATTERN)])
    version = models.CharField(max_length=50, validators=[RegexValidator(RELEASE_VERSION_PATTERN)])
    description = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    frozen_at = models.DateTimeField(null=True, blank=True)
    frozen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    # sha256 of the release's JSONL export (its items' canonical lines in id order).
    checksum = models.CharField(max_length=64, blank=True, default="")
    # The release of the same name the changelog compares against (None for the first).
    previous = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    changelog = models.JSONField(default=dict, blank=True)
    # What the curator who froze it acknowledged, in words: items humans had judged invalid.
    frozen_despite = models.TextField(blank=True, default="")

    objects = ReleaseQuerySet.as_manager()

    class Meta:
        ordering = ["name", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="release_unique_name_version"),
            models.CheckConstraint(condition=Q(name__regex=RELEASE_NAME_PATTERN), name="release_name_format"),
            models.CheckConstraint(condition=Q(version__regex=RELEASE_VERSION_PATTERN), name="release_version_format"),
            # Frozen means all of: when, by whom and a checksum; a draft has none of them.
            models.CheckConstraint(
                condition=Q(frozen_at__isnull=True, frozen_by__isnull=True, checksum="")
                | Q(frozen_at__isnull=False, frozen_by__isnull=False, checksum__regex=r"^[0-9a-f]{64}$"),
                name="release_frozen_is_complete",
            ),
            models.CheckConstraint(condition=~Q(previous=F("id")), name="release_previous_not_self"),
            models.CheckConstraint(
                condition=Q(frozen_at__isnull=False) | Q(frozen_despite=""), name="release_acknowledged_on_freezing"
            ),
        ]

    @property
    def is_frozen(self) -> bool:
        return self.frozen_at is not None

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"

    def _stored_frozen(self) -> bool:
        return self.pk is not None and Release.objects.filter(pk=self.pk, frozen_at__isnull=False).exists()

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The stored row decides, not this instance: a stale copy must not overwrite a frozen release.
        if self._stored_frozen():
            raise ReleaseFrozen(f"Release {self.label} is frozen: it cannot change. Make a new version instead.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        if self._stored_frozen():
            raise ReleaseFrozen(f"Release {self.label} is frozen: it cannot be deleted.")
        return super().delete(*args, **kwargs)

    def __str__(self) -> str:
        return self.label + ("" if self.is_frozen else " (draft)")


class ReleaseItemQuerySet(_FrozenGuardQuerySet):
    frozen_lookup = "release__frozen_at__isnull"
    what = "The items of a frozen release"

    def bulk_create(self, objs, *args, **kwargs):
        objs = list(objs)
        releases = {obj.release_id for obj in objs}
        if Release.objects.filter(pk__in=releases, frozen_at__isnull=False).exists():
            raise ReleaseFrozen("A frozen release cannot get new items.")
        return super().bulk_create(objs, *args, **kwargs)


class ReleaseItem(models.Model):
    """One benchmark instance of a release: the candidate's pipeline record at the revision frozen.

    `line` is the canonical JSON text, not a JSONField: jsonb reorders keys and may respell
    numbers, and the checksum must be recomputable byte for byte from what is stored.
    """

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="items")
    candidate = models.ForeignKey(Candidate, on_delete=models.PROTECT, related_name="release_items")
    external_id = models.CharField(max_length=200)
    revision = models.PositiveIntegerField()
    position = models.PositiveIntegerField(help_text="Order in the release: rank order when frozen")
    line = models.TextField()
    content_hash = models.CharField(max_length=64)

    objects = ReleaseItemQuerySet.as_manager()

    class Meta:
        ordering = ["release", "position"]
        constraints = [
            models.UniqueConstraint(fields=["release", "candidate"], name="release_item_one_per_candidate"),
            models.UniqueConstraint(fields=["release", "position"], name="release_item_one_per_position"),
            models.CheckConstraint(condition=Q(revision__gte=1), name="release_item_revision_positive"),
            models.CheckConstraint(condition=Q(position__gte=1), name="release_item_position_positive"),
        ]

    def _release_frozen(self) -> bool:
        return Release.objects.filter(pk=self.release_id, frozen_at__isnull=False).exists()

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self._release_frozen():
            raise ReleaseFrozen("The items of a frozen release cannot change.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        if self._release_frozen():
            raise ReleaseFrozen("The items of a frozen release cannot be deleted.")
        return super().delete(*args, **kwargs)

    def __str__(self) -> str:
        return f"{self.external_id} r{self.revision} in release {self.release_id}"


# --- Imports run as background jobs --------------------------------------------------------------


class ImportStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Imported"
    REFUSED = "refused", "Refused: nothing imported"
    FAILED = "failed", "Failed"


IMPORT_FINISHED = (ImportStatus.DONE, ImportStatus.REFUSED, ImportStatus.FAILED)


class ImportJob(models.Model):
    """One upload of pipeline files, imported all or nothing by a worker (`candidates.import_jobs`).

    The files wait under VERIHARM_IMPORT_DIR in a folder named by `token` (never by anything the
    uploader chose) until the job ends. The import and the job's end are one transaction, so an
    import is applied at most once however often its task is delivered.
    """

    token = models.CharField(max_length=32, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    replace = models.BooleanField(default=False)
    # [{"name": the uploaded name (shown, and named in errors), "stored": file name in the folder,
    #   "size": bytes, "lines": non-blank lines}]
    files = models.JSONField(default=list)
    total_lines = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=ImportStatus.choices, default=ImportStatus.QUEUED)
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # ImportSummary's counts once done.
    summary = models.JSONField(default=dict, blank=True)
    # Every bad line once refused: [{"file", "line", "field", "message"}].
    errors = models.JSONField(default=list, blank=True)
    # Why the job could not run at all (not the content's fault), once failed.
    failure = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=ImportStatus.values), name="import_job_known_status"),
            models.CheckConstraint(
                condition=(Q(status__in=IMPORT_FINISHED) & Q(finished_at__isnull=False))
                | (~Q(status__in=IMPORT_FINISHED) & Q(finished_at__isnull=True)),
                name="import_job_finished_when_ended",
            ),
            models.CheckConstraint(
                condition=~Q(status=ImportStatus.REFUSED) | ~Q(errors=[]), name="import_job_refusal_names_errors"
            ),
        ]
        indexes = [models.Index(fields=["status", "created_at"], name="import_job_status_idx")]

    @property
    def finished(self) -> bool:
        return self.status in IMPORT_FINISHED

    def __str__(self) -> str:
        return f"import {self.pk} ({self.status})"
