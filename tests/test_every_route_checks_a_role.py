"""Views with their own permission checks refuse annotators, on reading and on writing."""


def test_routes_with_their_own_get_permissions_refuse_annotators(annotator_client):
    for url in (
        "/api/decisions/",
        "/api/revisions/",
        "/api/releases/",
        "/api/evaluation/runs/",
        "/api/evaluation/workers/",
    ):
        assert annotator_client.get(url).status_code == 403, url
        assert annotator_client.post(url, {}, format="json").status_code == 403, url
