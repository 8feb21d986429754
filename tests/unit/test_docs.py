"""The documentation holds together: every relative link in the repository's Markdown reaches a
file (and, with an anchor, a heading of it), docs/README.md links every page under docs/, and the
extras the README names are the wheel's."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Trees that are not the project's documentation (installed or generated).
SKIP = {".venv", "node_modules", ".git", ".neo4j", "test-artifacts", ".mypy_cache", ".ruff_cache"}
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def markdown_files() -> list[Path]:
    return sorted(
        p for p in ROOT.rglob("*.md") if not SKIP & set(p.relative_to(ROOT).parts) and p.is_file()
    )


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for line in text.splitlines():
        if match := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line):
            base = slug(match.group(1))
            name, n = base, 1
            while name in found:  # a repeated heading gets -1, -2, ...
                name, n = f"{base}-{n}", n + 1
            found.add(name)
    return found


def links_in(text: str) -> list[str]:
    """The relative link targets of Markdown ``text`` (not images, code or URLs with a scheme)."""
    text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))  # code is not links
    return [target for target in LINK.findall(text) if not re.match(r"^[a-z]+:", target)]


def links(path: Path) -> list[str]:
    return links_in(path.read_text(encoding="utf-8"))


def test_every_relative_link_reaches_its_file_and_heading() -> None:
    files = markdown_files()
    assert ROOT / "README.md" in files and len(files) > 5
    broken = []
    for path in files:
        for target in links(path):
            file_part, _, anchor = target.partition("#")
            goal = (path.parent / file_part).resolve() if file_part else path
            if not goal.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and goal.suffix == ".md" and anchor not in anchors(goal):
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_docs_index_links_every_page() -> None:
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / t.partition("#")[0]).resolve() for t in links(index)}
    pages = {p.resolve() for p in (ROOT / "docs").rglob("*.md") if p != index}
    missing = sorted(str(p.relative_to(ROOT)) for p in pages - linked)
    assert not missing, f"pages docs/README.md does not link: {missing}"


def test_the_readme_names_only_the_wheels_extras() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = set(project["project"]["optional-dependencies"])
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sentence = readme.split("Extras: ", 1)[1].split(".", 1)[0]
    named = set(re.findall(r"`([a-z-]+)`", sentence))
    assert named == extras, f"README's extras {sorted(named)}, the wheel's {sorted(extras)}"


def test_slugs_and_link_parsing() -> None:
    assert slug("Recall by meaning: encoders and fusion") == "recall-by-meaning-encoders-and-fusion"
    assert slug("The HTTP server (graphsvc serve)") == "the-http-server-graphsvc-serve"
    assert slug("`GRAPHSVC_EMBED` and co.") == "graphsvc_embed-and-co"
    text = "[a](x.md#h) ![img](i.png) `[b](y.md)` [c](https://e.org) [d](#top)\n```\n[e](z.md)\n```"
    assert links_in(text) == ["x.md#h", "#top"]
