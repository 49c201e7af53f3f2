from django.urls import path

from .metrics_view import MetricsView

urlpatterns = [path("", MetricsView.as_view(), name="metrics")]
