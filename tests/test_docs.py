"""The docs site builds with warnings as errors, and its generated pages cover every command and public name."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import benchcast

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return out


def test_the_cli_reference_has_every_command(site):
    from typer.main import get_command

    from benchcast.cli import app

    page = (site / "cli" / "index.html").read_text()
    commands = sorted(get_command(app).commands)
    assert len(commands) >= 15
    for name in commands:
        assert f'id="benchcast-{name}"' in page, name  # a section per command, from its own --help
    assert "--margin" in page and "Usage: benchcast forecast" in page


def test_the_api_page_has_every_public_name(site):
    page = (site / "api" / "index.html").read_text()
    for name in benchcast.__all__:
        assert f"<code>{name}</code>" in page, name


def test_the_readme_is_short_and_its_links_exist():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 300
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
    # CI runs these two lines verbatim
    assert 'pip install -e ".[test]" && benchcast example' in text and "python -m pytest -q -n 2" in text
