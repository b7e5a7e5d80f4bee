"""Every relative link of the README and docs/ leads somewhere: to a file that exists, and to a
heading of that page when the link names one (GitHub's anchors: the heading in lower case,
punctuation dropped, spaces as hyphens)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def prose(page):
    """The page without its code blocks, where brackets and parentheses are code, not links."""
    return re.sub(r"```.*?```", "", page.read_text(), flags=re.S)


def anchors(page):
    headings = re.findall(r"^#+ (.*)$", prose(page), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_lead_to_a_file_and_heading(page):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no such heading")
    assert not broken, broken


def test_the_checker_sees_links_and_headings():
    assert "the-merge-loop-merge" in anchors(ROOT / "docs" / "design.md")
    assert "docs/design.md" in re.findall(r"\]\(([^)\s]+)\)", prose(ROOT / "README.md"))
