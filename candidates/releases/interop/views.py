"""Pages of the exports for other harnesses: a frozen release as an Inspect AI task or a Harbor
dataset (.tar.gz), by the export's name (`exports.HARNESS_EXPORTS`); a draft goes back to its page
with the reason, as the release's own downloads do."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views import View

from veriharm_site.permissions import RoleRequiredMixin

from ...models import Release
from ..downloads import gzip_download
from ..views import frozen_release_or_redirect
from .exports import HARNESS_EXPORTS


class ReleaseHarnessExportView(RoleRequiredMixin, View):
    """A frozen release as another harness runs it (`candidates.releases.interop.exports`)."""

    permission_required = "candidates.view_ranking"
    harness = ""

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        release = frozen_release_or_redirect(request, pk)
        if not isinstance(release, Release):
            return release
        return gzip_download(*HARNESS_EXPORTS[self.harness].archive(release))
