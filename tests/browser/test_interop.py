"""A release downloaded as an Inspect AI task and a Harbor dataset from its page, and the page
that imports another harness's log refusing a file that is not one, in Chromium."""

import tarfile

import pytest
from playwright.sync_api import expect

from evaluation.models import Run
from tests.browser.conftest import login
from tests.interop.support import freeze_examples


@pytest.mark.django_db(transaction=True)
def test_a_release_downloads_for_inspect_and_harbor_and_a_bad_log_is_refused(
    live_server, new_page, curator, admin_user, examples_imported, tmp_path
):
    release = freeze_examples(curator)
    page = new_page()
    login(page, live_server.url, admin_user.username)
    page.goto(f"{live_server.url}/candidates/releases/{release.pk}/")
    for testid, name, member in (
        ("download-inspect", "veriharm-bench-1.0-inspect.tar.gz", "veriharm-bench-1.0-inspect/veriharm_inspect.py"),
        ("download-harbor", "veriharm-bench-1.0-harbor.tar.gz", "veriharm-bench-1.0-harbor/dataset.toml"),
    ):
        with page.expect_download() as download:
            page.click(f"[data-testid={testid}]")
        assert download.value.suggested_filename == name
        path = tmp_path / name
        download.value.save_as(path)
        with tarfile.open(path, "r:gz") as tar:
            assert member in tar.getnames()

    page.goto(f"{live_server.url}/evaluation/")
    page.click("[data-testid=import-run]")
    page.select_option("select[name=release]", str(release.pk))
    page.select_option("select[name=harness]", "inspect")
    (tmp_path / "notes.txt").write_text("not a log")
    page.set_input_files("input[name=log]", str(tmp_path / "notes.txt"))
    page.click("button:has-text('Import')")
    expect(page.locator("[data-testid=import-errors]")).to_contain_text("an Inspect log is a .eval or .json file")
    assert not Run.objects.exists()
