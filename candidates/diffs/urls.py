"""Routes of the diffs: the highlighting's stylesheet (included by candidates/urls.py)."""

from django.urls import path

from . import views

urlpatterns = [
    path("highlight.css", views.highlight_css, name="highlight-css"),
]
