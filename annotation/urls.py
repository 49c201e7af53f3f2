from django.urls import path

from . import views

app_name = "annotation"

urlpatterns = [
    # Annotators: their studies, then one blind item at a time.
    path("", views.AnnotatorHomeView.as_view(), name="home"),
    path("preferences/", views.PreferencesView.as_view(), name="preferences"),
    path("s/<number:study_id>/next/", views.ClaimNextView.as_view(), name="next"),
    path("s/<number:study_id>/skipped/", views.ClaimNextView.as_view(skipped=True), name="next-skipped"),
    path("s/<number:study_id>/guidelines/", views.GuidelinesView.as_view(), name="guidelines"),
    path("s/<number:study_id>/i/<str:token>/", views.ItemView.as_view(), name="item"),
    path("s/<number:study_id>/i/<str:token>/skip/", views.SkipView.as_view(), name="skip"),
    path("s/<number:study_id>/i/<str:token>/return/", views.ReturnView.as_view(), name="return"),
    path("s/<number:study_id>/set-aside/", views.SkippedView.as_view(), name="skipped-list"),
    path("s/<number:study_id>/done/", views.DoneView.as_view(), name="done"),
    path("s/<number:study_id>/labels/", views.MyLabelsView.as_view(), name="labels"),
    # Curators: studies, their results and exports.
    path("studies/", views.StudyListView.as_view(), name="studies"),
    path("studies/new/", views.StudyCreateView.as_view(), name="study-create"),
    path("studies/<number:pk>/", views.StudyDetailView.as_view(), name="study"),
    path("studies/<number:pk>/close/", views.StudyStatusView.as_view(action="close"), name="study-close"),
    path("studies/<number:pk>/reopen/", views.StudyStatusView.as_view(action="reopen"), name="study-reopen"),
    path("studies/<number:pk>/members/", views.MembersAddView.as_view(), name="study-members"),
    path("studies/<number:pk>/guidelines/", views.StudyGuidelinesView.as_view(), name="study-guidelines"),
    path("studies/<number:pk>/annotators/", views.AnnotatorQualityView.as_view(), name="annotators"),
    path("studies/<number:pk>/items/<number:number>/", views.ItemReviewView.as_view(), name="item-review"),
    path("studies/<number:pk>/results/", views.ResultsView.as_view(), name="results"),
    path("studies/<number:pk>/disagreement/", views.DisagreementView.as_view(), name="disagreement"),
    path("studies/<number:pk>/export/<str:name>", views.ExportView.as_view(), name="export"),
]
