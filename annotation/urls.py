"""The pages of both sides: the annotator's blind labelling (`labelling.views`) and the studies and
their results (`studies.views`)."""

from django.urls import path

from .labelling import views as labelling
from .studies import views as studies

app_name = "annotation"

urlpatterns = [
    # Annotators: their studies, then one blind item at a time.
    path("", labelling.AnnotatorHomeView.as_view(), name="home"),
    path("preferences/", labelling.PreferencesView.as_view(), name="preferences"),
    path("s/<number:study_id>/next/", labelling.ClaimNextView.as_view(), name="next"),
    path("s/<number:study_id>/skipped/", labelling.ClaimNextView.as_view(skipped=True), name="next-skipped"),
    path("s/<number:study_id>/guidelines/", labelling.GuidelinesView.as_view(), name="guidelines"),
    path("s/<number:study_id>/i/<str:token>/", labelling.ItemView.as_view(), name="item"),
    path("s/<number:study_id>/i/<str:token>/skip/", labelling.SkipView.as_view(), name="skip"),
    path("s/<number:study_id>/i/<str:token>/return/", labelling.ReturnView.as_view(), name="return"),
    path("s/<number:study_id>/set-aside/", labelling.SkippedView.as_view(), name="skipped-list"),
    path("s/<number:study_id>/done/", labelling.DoneView.as_view(), name="done"),
    path("s/<number:study_id>/labels/", labelling.MyLabelsView.as_view(), name="labels"),
    # Curators: studies, their results and exports.
    path("studies/", studies.StudyListView.as_view(), name="studies"),
    path("studies/new/", studies.StudyCreateView.as_view(), name="study-create"),
    path("studies/<number:pk>/", studies.StudyDetailView.as_view(), name="study"),
    path("studies/<number:pk>/close/", studies.StudyStatusView.as_view(action="close"), name="study-close"),
    path("studies/<number:pk>/reopen/", studies.StudyStatusView.as_view(action="reopen"), name="study-reopen"),
    path("studies/<number:pk>/members/", studies.MembersAddView.as_view(), name="study-members"),
    path("studies/<number:pk>/guidelines/", studies.StudyGuidelinesView.as_view(), name="study-guidelines"),
    path("studies/<number:pk>/annotators/", studies.AnnotatorQualityView.as_view(), name="annotators"),
    path("studies/<number:pk>/items/<number:number>/", studies.ItemReviewView.as_view(), name="item-review"),
    path("studies/<number:pk>/results/", studies.ResultsView.as_view(), name="results"),
    path("studies/<number:pk>/disagreement/", studies.DisagreementView.as_view(), name="disagreement"),
    path("studies/<number:pk>/export/<str:name>", studies.ExportView.as_view(), name="export"),
]
