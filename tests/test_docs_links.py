"""Every relative link of README.md and docs/**/*.md resolves: the file exists, and a `#anchor` names a heading of
the target page (GitHub's slugs: lower case, punctuation dropped, spaces to hyphens, repeats numbered -1, -2, ...)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def outside_fences(text: str) -> list[str]:
    """The page's lines outside fenced code blocks."""
    lines, inside = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            inside = not inside
            continue
        if not inside:
            lines.append(line)
    return lines


def prose(text: str) -> str:
    """The page without its fenced code blocks and inline code spans (links there are not links)."""
    return "\n".join(re.sub(r"`[^`]*`", "", line) for line in outside_fences(text))


def slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in outside_fences(path.read_text(encoding="utf-8")):
        # an HTML anchor in the text (<a id="x"></a>, as GitHub renders it) names a place too
        found.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken_links(page: Path) -> list[str]:
    bad = []
    for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            bad.append(f"{target} (no file {dest.relative_to(REPO_ROOT) if dest.is_relative_to(REPO_ROOT) else dest})")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target} (no heading #{anchor} in {dest.name})")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO_ROOT)) for p in PAGES])
def test_every_relative_link_and_anchor_resolves(page):
    assert broken_links(page) == []


def test_the_slugs_follow_github():
    assert slug("State across runs and restarts") == "state-across-runs-and-restarts"
    assert slug("Figures (2026-12-01, 2 shared cores)") == "figures-2026-12-01-2-shared-cores"
    assert slug("`Taskflow(\"aml\")` on a file") == "taskflowaml-on-a-file"


def test_a_missing_file_and_a_missing_anchor_are_reported(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## Real `code` heading\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[a](other.md#real-code-heading) [b](other.md#nope) [c](gone.md) [d](#top) `[e](inline.md)`\n"
                    "```\n[f](fenced.md)\n```\n# Top\n", encoding="utf-8")
    assert [b.split(" ")[0] for b in broken_links(page)] == ["other.md#nope", "gone.md"]
