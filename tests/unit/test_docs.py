"""The README stays a short entry point, and no link in it or in docs/ leads nowhere.

Pure file reads: no database, no Django (runs with `-p no:django --noconftest` too).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
README_MAX_LINES = 250

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
# An inline link or image, [text](target "title"), and a reference definition, [label]: target.
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
# Prose names a page as `docs/<name>.md`; such a name is as much a link as a bracketed one.
DOCS_PATH = re.compile(r"`(docs/[\w.-]+\.md)`")
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)


def _without_code(text: str) -> str:
    """Code blocks and code spans hold commands and examples, not links."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def relative_links(page: Path) -> list[tuple[str, Path]]:
    """Each local link of a page with the folder it is relative to."""
    text = page.read_text(encoding="utf-8")
    prose = _without_code(text)
    targets = INLINE_LINK.findall(prose) + REFERENCE_LINK.findall(prose)
    # A link is relative to its page's folder, as a Markdown viewer resolves it; a `docs/...`
    # name in prose is relative to the repository's root, wherever it is written.
    links = [(t, page.parent) for t in targets if not EXTERNAL.match(t) and not t.startswith("#")]
    return links + [(name, REPO) for name in DOCS_PATH.findall(text)]


def file_part(target: str) -> str:
    return target.split("#", 1)[0].split("?", 1)[0]


def test_readme_is_at_most_250_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines, at most {README_MAX_LINES}"


def test_readme_first_code_block_is_make_run_and_make_test() -> None:
    first = FENCE.search(README.read_text(encoding="utf-8"))
    assert first is not None, "README.md has no code block"
    commands = [line.split("#", 1)[0].strip() for line in first.group(1).splitlines()]
    assert [c for c in commands if c] == ["make run", "make test"]


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_points_to_an_existing_file(page: Path) -> None:
    broken = [t for t, base in relative_links(page) if not (base / file_part(t)).exists()]
    assert not broken, f"{page.relative_to(REPO)} links to missing files: {broken}"


def test_the_readme_links_every_docs_page() -> None:
    linked = {file_part(t) for t, _ in relative_links(README)}
    missing = [f"docs/{p.name}" for p in DOCS if f"docs/{p.name}" not in linked]
    assert not missing, f"README.md's list of docs pages leaves out {missing}"


WHERE_THINGS_ARE = re.compile(r"^## Where things are\n(.*?)^## ", re.MULTILINE | re.DOTALL)
PATH_SPAN = re.compile(r"`([\w./-]+/[\w./-]*|[\w-]+\.(?:py|md|ini|toml))`")


def test_every_path_the_where_things_are_table_names_exists() -> None:
    section = WHERE_THINGS_ARE.search((REPO / "docs" / "development.md").read_text(encoding="utf-8"))
    assert section is not None, "docs/development.md has no 'Where things are' section"
    paths = PATH_SPAN.findall(section.group(1))
    assert len(paths) >= 20
    missing = [p for p in paths if not (REPO / p).exists()]
    assert missing == [], f"docs/development.md names paths that do not exist: {missing}"
