"""What the ranking page offers to do with its current filter or with the rows ticked on it,
registered in `candidates.hooks` by the apps built on candidates (which this app never imports),
e.g. the annotation app's "new study from this filter". Each action says which permission it
needs, so the page offers it only to those who may use it (its own view checks again)."""

from __future__ import annotations

from typing import TYPE_CHECKING

# Registered through candidates.hooks; named here too for the apps that register through this module.
from .hooks import RankingAction, ranking_actions

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, PermissionsMixin


def ranking_actions_for(user: PermissionsMixin | AnonymousUser) -> list[RankingAction]:
    """The actions this user may take."""
    return [action for action in ranking_actions() if user.has_perm(action.permission)]
