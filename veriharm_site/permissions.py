"""Role checks shared by pages and API views: every check names a permission."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth.mixins import LoginRequiredMixin, PermissionRequiredMixin
from rest_framework.permissions import BasePermission

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponseRedirect
    from rest_framework.request import Request
    from rest_framework.views import APIView

    from veriharm_site.accounts.models import User


class RoleRequiredMixin(LoginRequiredMixin, PermissionRequiredMixin):
    """Pages: anonymous users go to the login page, signed-in users without the permission get 403."""

    raise_exception = False
    request: HttpRequest  # set by the view this is mixed into

    def handle_no_permission(self) -> HttpResponseRedirect:
        if self.request.user.is_authenticated:
            self.raise_exception = True
        return super().handle_no_permission()


def signed_in_user(request: HttpRequest | Request) -> User:
    """The user of a request that passed a role check, which lets no anonymous user through."""
    from django.contrib.auth.models import AnonymousUser

    user = request.user
    assert not isinstance(user, AnonymousUser), "a role check lets no anonymous user through"
    return user


def api_permission(*perms: str) -> type[BasePermission]:
    """A DRF permission class that requires a signed-in user holding every one of `perms`."""

    class _HasPerms(BasePermission):
        message = f"This needs the permission {', '.join(perms)}."

        def has_permission(self, request: Request, view: APIView) -> bool:
            user = request.user
            return bool(user and user.is_authenticated and user.has_perms(perms))

    _HasPerms.__name__ = "Has_" + "_".join(p.replace(".", "_") for p in perms)
    return _HasPerms


def api_any_permission(*perms: str) -> type[BasePermission]:
    """A DRF permission class that requires a signed-in user holding at least one of `perms`."""

    class _HasAnyPerm(BasePermission):
        message = f"This needs one of the permissions {', '.join(perms)}."

        def has_permission(self, request: Request, view: APIView) -> bool:
            user = request.user
            return bool(user and user.is_authenticated and any(user.has_perm(p) for p in perms))

    _HasAnyPerm.__name__ = "Has_any_" + "_".join(p.replace(".", "_") for p in perms)
    return _HasAnyPerm


def api_read_or_write_permission(read: str, write: str) -> type[BasePermission]:
    """A DRF permission class for an endpoint that both shows and changes: safe methods need `read`,
    the others `write`. Used as `permission_classes`, so no view needs a base class for this."""
    from rest_framework.permissions import SAFE_METHODS

    class _ReadOrWrite(BasePermission):
        def has_permission(self, request: Request, view: APIView) -> bool:
            perm = read if request.method in SAFE_METHODS else write
            self.message = f"This needs the permission {perm}."
            user = request.user
            return bool(user and user.is_authenticated and user.has_perm(perm))

    _ReadOrWrite.__name__ = f"Read_{read.replace('.', '_')}_or_write_{write.replace('.', '_')}"
    return _ReadOrWrite
