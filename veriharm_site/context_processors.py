from django.http import HttpRequest


def roles(request: HttpRequest) -> dict:
    """What the navigation may offer this user; the views check again on their own."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"can": {}}
    return {
        "can": {
            "annotate": user.has_perm("annotation.annotate"),
            "view_ranking": user.has_perm("candidates.view_ranking"),
            "import_pipeline": user.has_perm("candidates.import_pipeline"),
            "curate": user.has_perm("candidates.curate"),
            "manage_studies": user.has_perm("annotation.manage_studies"),
            "view_results": user.has_perm("annotation.view_results"),
            "view_evaluations": user.has_perm("evaluation.view_evaluations"),
            "run_evaluations": user.has_perm("evaluation.run_evaluations"),
            "admin_site": user.is_staff,
        }
    }
