"""What the ranking page offers to do with its current filter or with the rows ticked on it: the
hook the apps built on candidates (which this app never imports) register in, e.g. the annotation
app's "new study from this filter", and its read. Each action says which permission it needs, so
the page offers it only to those who may use it (its own view checks again)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from veriharm_site.registries import Registry

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, PermissionsMixin


@dataclass(frozen=True)
class RankingAction:
    permission: str  # the page offers it only to those who hold it (its own view checks again)
    filter_label: str
    # The ranking's query string (its filters, without the page) -> where the filter goes.
    filter_url: Callable[[str], str]
    rows_label: str
    # A GET form's action: the ticked rows go as `candidates` (their ids), with `rows_fields`.
    rows_url: Callable[[], str]
    rows_fields: dict[str, str] = field(default_factory=dict)


RANKING_ACTIONS: Registry[RankingAction] = Registry()


def ranking_actions_for(user: PermissionsMixin | AnonymousUser) -> list[RankingAction]:
    """The actions this user may take."""
    return [action for action in RANKING_ACTIONS if user.has_perm(action.permission)]
