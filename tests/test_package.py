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
