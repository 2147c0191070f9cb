"""The documentation site builds with strict link checking, offline, and a broken link fails the build.

``mkdocs build --strict`` (``mkdocs.yml``) turns every warning into a failure; the configuration makes a link to
a missing page, a missing anchor, and a page left out of the nav each a warning. The README is not part of the
site, so its own links are checked here against the files and headings they name.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

REPO = Path(__file__).resolve().parents[2]


def _build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(REPO / "docs", root / "docs")
    shutil.copy2(REPO / "mkdocs.yml", root / "mkdocs.yml")
    return root


def test_the_documentation_builds_with_strict_link_checking(tmp_path: Path) -> None:
    done = _build(REPO, tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "codes.html").is_file()
    assert (tmp_path / "site" / "architecture.html").is_file()


@pytest.mark.parametrize(
    ("page", "plant", "said"),
    [
        ("agents.md", "\nSee [the missing page](no-such-page.md).\n", "no-such-page.md"),
        ("agents.md", "\nSee [the ledger](ledgers.md#no-such-heading).\n", "no-such-heading"),
        ("orphan.md", "# A page the nav leaves out\n", "orphan.md"),
    ],
    ids=["missing-page", "missing-anchor", "page-not-in-nav"],
)
def test_a_broken_link_or_an_orphan_page_fails_the_build(tmp_path: Path, page: str, plant: str, said: str) -> None:
    root = _copy(tmp_path)
    with (root / "docs" / page).open("a", encoding="utf-8") as out:
        out.write(plant)
    done = _build(root, tmp_path / "site")
    assert done.returncode != 0
    assert said in done.stdout + done.stderr


def test_the_build_uses_no_theme_or_plugin_that_needs_the_network() -> None:
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^theme:\n  name: mkdocs$", config, flags=re.M)
    assert "plugins:" not in config and "extra_css" not in config and "extra_javascript" not in config
    assert "highlightjs: false" in config


def test_the_built_site_loads_nothing_from_another_host(tmp_path: Path) -> None:
    assert _build(REPO, tmp_path / "site").returncode == 0
    pages = sorted((tmp_path / "site").rglob("*.html"))
    assert pages
    loads = {
        match
        for page in pages
        for match in re.findall(r'(?:src|href)="(https?://[^"]+\.(?:js|css))"', page.read_text("utf-8"))
    }
    assert loads == set()


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    headings = re.findall(r"^#{1,6} (.+)$", text, flags=re.M)
    return {slugify(re.sub(r"[`*]", "", heading), "-") for heading in headings}


def _broken_links(readme: Path) -> list[str]:
    broken = []
    for target in _LINK.findall(readme.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # an absolute URL: nothing the README links to is outside the repository
        path, _, anchor = target.partition("#")
        page = (readme.parent / path) if path else readme
        if not page.is_file():
            broken.append(target)
        elif anchor and anchor not in _anchors(page):
            broken.append(target)
    return broken


def test_every_link_in_the_readme_names_a_page_and_heading_that_exist() -> None:
    links = _LINK.findall((REPO / "README.md").read_text(encoding="utf-8"))
    assert any(link.startswith("docs/reference/") for link in links)
    assert _broken_links(REPO / "README.md") == []


def test_the_readme_link_check_finds_a_missing_page_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Title\n\n## A `code` heading\n", encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text(
        "[ok](docs/page.md#a-code-heading) [gone](docs/gone.md) [no](docs/page.md#nowhere) [web](https://x.example)\n",
        encoding="utf-8",
    )
    assert _broken_links(readme) == ["docs/gone.md", "docs/page.md#nowhere"]


def test_the_readme_opens_with_exactly_the_two_commands_and_stays_a_few_screens() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[2:6] == [
        "```sh",
        "make demo   # sets up .venv, compiles both examples, serves them on loopback and shows what each call did",
        "make test   # sets up .venv, then ruff, mypy --strict and the whole pytest suite",
        "```",
    ]
    assert len(lines) <= 150


def test_each_tested_command_block_lives_where_its_test_reads_it() -> None:
    """A ``# [...-tested]`` block moved to another page, or a new marker no test reads, fails here."""
    found = {}
    for page in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        for marker in re.findall(r"```sh\n# \[([a-z-]+-tested)\]\n", page.read_text(encoding="utf-8")):
            found.setdefault(marker, []).append(str(page.relative_to(REPO)))
    assert found == {
        "byo-api-tested": ["README.md"],  # tests/cli/test_init.py
        "docs-tested": ["docs/deploy.md"],  # tests/deploy/test_docs.py
    }
    readers = {"byo-api-tested": "tests/cli/test_init.py", "docs-tested": "tests/deploy/test_docs.py"}
    for marker, test in readers.items():
        source = (REPO / test).read_text(encoding="utf-8")
        assert f"[{marker}]" in source.replace("\\[", "[").replace("\\]", "]")
        assert found[marker][0] in source.replace('REPO / "docs" / "deploy.md"', "docs/deploy.md")
