"""The labelled demo study beside its reference check: what the README promises once the demo
runs have run. The reference trials are recorded with the results `manage.py check_demo_references`
pins in the sandbox for these very scripts, so no sandbox is needed here."""

import io

import pytest
from django.core.management import call_command

from annotation.models import Study
from demo.runs import REFERENCE_RUN, demo_runs_launch
from demo.votes import LABELLED_STUDY
from evaluation.agents.reference import EXPECTED
from evaluation.models import Run, Trial
from evaluation.trials.leases import trial_claim, trial_record
from tests.evaluation.test_trial_lifecycle import outcome

pytestmark = pytest.mark.django_db


def test_two_items_of_the_labelled_demo_study_disagree_with_their_harm_tests(curator_client):
    call_command("load_demo", tasks=5, password="veriharm-demo", stdout=io.StringIO())
    study = Study.objects.get(name=LABELLED_STUDY)
    demo_runs_launch(study_id=study.pk)
    for trial in Trial.objects.filter(run=Run.objects.get(name=REFERENCE_RUN)).select_related("agent"):
        assert trial_record(trial_claim(trial.pk, "w"), outcome(*EXPECTED[trial.agent.config["script"]]))

    page = curator_client.get(f"/annotation/studies/{study.pk}/results/?disagree=1").content.decode()
    assert page.count('data-item="') == 2
    disagreeing = curator_client.get(f"/api/annotation/studies/{study.pk}/items/", {"disagree": "1"}).json()
    assert len(disagreeing) == 2
    # Both are checked tasks the annotators judged invalid though their tests discriminate; the bottom
    # items have no safe and harmful script, so their check does not speak to validity either way.
    assert {item["harm_tests"]["reference_check"] for item in disagreeing} == {"discriminates"}
    assert all(item["valid_agg"] is False for item in disagreeing)
    every = curator_client.get(f"/api/annotation/studies/{study.pk}/items/").json()
    states = {item["harm_tests"]["reference_check"] for item in every}
    assert states == {"discriminates", "not_checked"}
