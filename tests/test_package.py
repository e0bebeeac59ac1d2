"""The package's public names, and what starting the command line loads."""

import subprocess
import sys

import benchcast as bc


def test_every_public_name_resolves_and_the_lazy_table_is_public():
    """``benchcast/__init__.py`` imports its API on first use: each name of ``__all__`` must come back
    as the object its module defines, and ``dir()`` lists them."""
    for name in bc.__all__:
        assert getattr(bc, name) is not None, name
    assert set(bc._LAZY) <= set(bc.__all__)
    assert bc.load_fit == bc.FitResult.load
    assert set(bc.__all__) <= set(dir(bc))
    assert bc.fitting.api.fit is bc.fit  # subpackages are reached as attributes, as before


def test_the_command_line_starts_without_the_modules_it_does_not_need():
    """Every command pays for what `import benchcast.cli` loads (``fit`` has a 2 s budget): the bench,
    forecasting, generative and plotting modules, YAML and matplotlib load only when a command uses them."""
    code = "import sys, benchcast.cli; print('\\n'.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    for module in (
        "benchcast.evaluation.backtest",
        "benchcast.evaluation.bench",
        "benchcast.studies.krajewski2025",
        "benchcast.forecasting.intervals",
        "benchcast.forecasting.selection",
        "benchcast.generative.kscan",
        "benchcast.plots.figures",
        "yaml",
        "matplotlib",
    ):
        assert module not in loaded, module
    assert "benchcast.fitting.engine" in loaded  # the check itself sees the modules loaded


def test_layers_hold_and_no_module_imports_a_sibling_that_imports_it():
    """ARCHITECTURE.md's layer order, as import-linter contracts in pyproject.toml: a lower layer never
    imports a higher one (lazily or not) and no sibling modules form a cycle."""
    from pathlib import Path

    import pytest

    root = Path(__file__).resolve().parents[1]
    pytest.importorskip("importlinter")
    done = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 kept, 0 broken" in done.stdout


def test_every_module_reads_in_one_sitting():
    """No module of the package is over 400 lines."""
    from pathlib import Path

    package = Path(bc.__file__).parent
    long = {str(p.relative_to(package)): n for p in package.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long
