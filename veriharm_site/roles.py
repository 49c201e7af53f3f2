"""The four roles, as Django groups with named permissions.

- annotator: labels study items, blind (never the group, Q, judges or others' labels).
- viewer: reads the ranking, candidates, releases, reports, study results and evaluation results; changes nothing.
- curator: what a viewer reads, plus imports, review decisions, revisions, releases and studies.
- admin: what a curator does, plus launching evaluations, identities in exports and the Django admin.

Every page and endpoint checks a permission, never a group name, so an admin
can compose other roles in the Django admin without touching code.
"""

from django.contrib.auth.models import Group, Permission

ANNOTATOR = "annotator"
VIEWER = "viewer"
CURATOR = "curator"
ADMIN = "admin"

_ANNOTATOR_PERMS = ["annotation.annotate"]
# Read-only: every permission here guards reading only (writes need curate, import_pipeline,
# manage_studies or run_evaluations), so a viewer can look at everything a curator sees, study
# results included, and act on nothing.
_VIEWER_PERMS = ["candidates.view_ranking", "evaluation.view_evaluations", "annotation.view_results"]
_CURATOR_PERMS = [
    "candidates.view_ranking",
    "annotation.view_results",
    "candidates.import_pipeline",
    "candidates.curate",
    "annotation.manage_studies",
    "evaluation.view_evaluations",
]
_ADMIN_PERMS = _CURATOR_PERMS + ["evaluation.run_evaluations", "annotation.export_identities"]

ROLE_PERMISSIONS: dict[str, list[str]] = {
    ANNOTATOR: _ANNOTATOR_PERMS,
    VIEWER: _VIEWER_PERMS,
    CURATOR: _CURATOR_PERMS,
    ADMIN: _ADMIN_PERMS,
}


# Admins also manage every record of these apps in the Django admin (users are in accounts).
ADMIN_APPS = ("auth", "accounts", "candidates", "annotation", "evaluation")


def ensure_roles() -> None:
    """Create the groups and grant each the permissions that exist so far (idempotent)."""
    for role, perms in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        if role == ADMIN:
            group.permissions.add(*Permission.objects.filter(content_type__app_label__in=ADMIN_APPS))
        wanted = []
        for dotted in perms:
            app_label, codename = dotted.split(".", 1)
            perm = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
            if perm is not None:
                wanted.append(perm)
        group.permissions.add(*wanted)
