"""The candidate page: everything known about one candidate (its texts and diff, tests, judgements,
flags, the human and harm-test verdicts, the panels other apps add, its decisions and revisions),
and the decision form for curators (POST). The review page (`views.ReviewView`) is this page
inside the queue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.generic import TemplateView

from veriharm_site.permissions import RoleRequiredMixin, signed_in_user

from ..diffs import diffing, highlight
from ..hooks.flags import candidate_flags, flag_warning
from ..hooks.harm_test_verdicts import harm_test_verdicts_for, reference_states_for
from ..hooks.human_verdicts import human_majorities, human_majorities_visible
from ..hooks.panels import candidate_panels, shared_page_reads
from ..models import Candidate
from ..pool import selectors as pool
from ..pool.synthetic import CANDIDATE_TEXT, synthetic_ids
from .decision_forms import decided_message, decision_from_form
from .forms import DecisionForm
from .review import REASON_OPTIONS, approval_text
from .selectors import curation_history


class CandidateDetailView(RoleRequiredMixin, TemplateView):
    """Everything known about a candidate; curators also decide on it here (POST)."""

    permission_required = "candidates.view_ranking"
    decide_permission = "candidates.curate"
    template_name = "candidates/detail.html"

    def get_permission_required(self) -> Sequence[str]:
        if self.request.method == "POST":
            return (self.decide_permission,)
        return super().get_permission_required()

    def _detail(self, external_id: str) -> Candidate:
        try:
            return pool.candidate_detail(external_id)
        except Candidate.DoesNotExist:
            raise Http404("No candidate with this id.") from None

    def get_context_data(self, decision_form: DecisionForm | None = None, **kwargs: Any) -> dict[str, Any]:
        # The page's reads and its panels' share one scope: the reference state is read once for both.
        with shared_page_reads():
            return self._context(decision_form, **kwargs)

    def _context(self, decision_form: DecisionForm | None, **kwargs: Any) -> dict[str, Any]:
        candidate = self._detail(kwargs["external_id"])
        diff = diffing.side_by_side(candidate.source_task.instruction, candidate.instruction)
        bounds = pool.ranking_bounds()
        flags = candidate_flags([candidate.pk]).get(candidate.pk, [])
        user = self.request.user
        can_decide = user.has_perm(self.decide_permission)
        humans_visible = human_majorities_visible(user)
        # Read once: shown to those who may see it, and part of the warning an approval keeps.
        majority = human_majorities([candidate.pk]).get(candidate.pk) if humans_visible or can_decide else None
        references = reference_states_for(user, [candidate.pk])
        # While its tests are not checked: what checks them next, and who (the evaluation panel offers it).
        verdict = (harm_test_verdicts_for(user, [candidate.pk]) or {}).get(candidate.pk)
        synthetic = candidate.pk in synthetic_ids([candidate.pk])
        if decision_form is None and can_decide:
            decision_form = DecisionForm(initial={"candidate": candidate.external_id, "revision": candidate.revision})
        return super().get_context_data(
            candidate=candidate,
            decision_form=decision_form,
            reasons=REASON_OPTIONS,
            curation=curation_history(candidate.pk),
            panels=candidate_panels(candidate, self.request.user),
            flags=flags,
            flag_warning=flag_warning(flags),
            # What an approval now keeps, flags and humans' rejection: refused if it changes before the click.
            approval_warning=approval_text(flags, majority, synthetic),
            synthetic=synthetic,
            synthetic_text=CANDIDATE_TEXT,
            human=majority if humans_visible else None,
            humans_visible=humans_visible,
            reference=None if references is None else references[candidate.pk],
            reference_next_step=verdict.reference_next_step if verdict else "",
            group=bounds.group(candidate.rank),
            bounds=bounds,
            diff=diff,
            left_html=diffing.segments_html(diff.left),
            right_html=diffing.segments_html(diff.right),
            task_test_html=highlight.python_html(candidate.source_task.task_test),
            harm_test_html=highlight.python_html(candidate.harm_test),
            references_html={k: highlight.bash_html(v) for k, v in candidate.references.items()},
            setup_html=highlight.bash_html(candidate.source_task.environment.get("setup", "") or ""),
            judgements=list(candidate.judgements.all()),
            **kwargs,
        )

    def post(self, request: HttpRequest, external_id: str) -> HttpResponse:
        candidate = self._detail(external_id)
        form = DecisionForm(request.POST)
        decision = decision_from_form(form, candidate, signed_in_user(request))
        if decision is None:
            context = self.get_context_data(external_id=external_id, decision_form=form)
            return self.render_to_response(context, status=400)
        messages.success(request, decided_message(decision, candidate))
        return redirect("candidates:detail", candidate.external_id)
