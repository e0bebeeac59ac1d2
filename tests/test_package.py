"""The package's public names, its layers and module sizes, its docstrings, and what starting the
command line loads."""

import ast
import pathlib
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
    forecasting, generative and plotting modules, YAML, matplotlib and scipy's optimize and special (0.45 s
    together), and numpy, pandas (with pyarrow 0.4 s), the laws, the fitter and the readers load only when
    a command uses them: `benchcast --help` has a 0.8 s budget (0.27 s measured, 0.87 s before)."""
    code = "import sys, benchcast.cli; print('\\n'.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    for module in (
        "benchcast.evaluation.backtest",
        "benchcast.evaluation.bench",
        "benchcast.studies.krajewski2025",
        "benchcast.forecasting.bootstrap",
        "benchcast.forecasting.selection",
        "benchcast.generative.kscan",
        "benchcast.plots.figures",
        "yaml",
        "matplotlib",
        "scipy.optimize",
        "scipy.special",
        "numpy",
        "pandas",
        "scipy",
        "benchcast.laws",
        "benchcast.fitting",
        "benchcast.data.readers",
        "benchcast.utils.jsonable",
    ):
        assert module not in loaded, module
    assert "benchcast.cli.core" in loaded and "typer" in loaded  # the check itself sees the modules loaded


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
    """No module of the package is over 1000 lines (issue 30 dropped the 400-line cap where it split one concept
    across modules: forecasting/ is nine modules, each one concept)."""
    from pathlib import Path

    package = Path(bc.__file__).parent
    long = {
        str(p.relative_to(package)): n for p in package.rglob("*.py") if (n := len(p.read_text().splitlines())) > 1000
    }
    assert not long, long


def test_forecasting_is_fourteen_modules_of_one_concept_each():
    """The one forecaster's package (issue 30): targets, bootstrap, draws, extrapolation, selection, ensemble,
    answers, planning, flags, the forecast (issue 38), the other results and the comparison of recipes (issue 52),
    its tables from the draws apart (compare_draws), and the simplest alternative beside a forecast (issue 50)."""
    from pathlib import Path

    modules = {p.stem for p in (Path(bc.__file__).parent / "forecasting").glob("*.py")} - {"__init__"}
    assert modules == {
        "targets",
        "bootstrap",
        "draws",
        "extrapolation",
        "selection",
        "ensemble",
        "answers",
        "planning",
        "flags",
        "forecast",
        "results",
        "compare",
        "compare_draws",
        "alternative",
    }


def test_the_fitting_engine_is_a_package_of_small_modules():
    """The engine (issue #21): one module per algorithm - problem, loss, solver, starts,
    projection, search, replicates, findings - each under 250 lines."""
    from pathlib import Path

    engine = Path(bc.__file__).parent / "fitting" / "engine"
    sizes = {p.stem: len(p.read_text().splitlines()) for p in engine.glob("*.py")}
    assert {"problem", "loss", "solver", "starts", "projection", "search", "replicates"} <= set(sizes)
    assert max(sizes.values()) < 250, sizes


def _documented(func: ast.FunctionDef) -> str:
    """What numpydoc sections ``func`` lacks ('' if none): Parameters for arguments, Returns for a value."""
    doc = ast.get_docstring(func) or ""
    args = [
        a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs) if a.arg not in ("self", "cls")
    ]
    args += [a.arg for a in (func.args.vararg, func.args.kwarg) if a is not None]
    returns = func.returns is not None and not (isinstance(func.returns, ast.Constant) and func.returns.value is None)
    need = ["Parameters"] if args and "Parameters\n" not in doc else []
    if returns and "Returns\n" not in doc and "Yields\n" not in doc:
        need.append("Returns")
    return "/".join(need)


def _missing_docs(package: pathlib.Path) -> list[tuple[str, str, str]]:
    """(module, name, missing sections) for the public API: the functions and classes ``benchcast.__all__`` names
    (and their public methods), where they are defined."""
    import importlib

    public = set(bc.__all__)
    homes = {importlib.import_module(bc._LAZY[name]).__file__ for name in public if name in bc._LAZY}
    trees = {
        p: ast.parse(p.read_text()) for p in sorted(package.rglob("*.py")) if "cli" not in p.relative_to(package).parts
    }
    classes = {node.name: node for tree in trees.values() for node in tree.body if isinstance(node, ast.ClassDef)}

    def inherited(cls: ast.ClassDef, name: str) -> bool:
        for base in cls.bases:
            parent = classes.get(base.id if isinstance(base, ast.Name) else getattr(base, "attr", ""))
            if parent is not None and parent is not cls:
                if any(isinstance(n, ast.FunctionDef) and n.name == name for n in parent.body) or inherited(
                    parent, name
                ):
                    return True
        return False

    def is_property(func: ast.FunctionDef) -> bool:
        names = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "") for d in func.decorator_list}
        return bool(names & {"property", "cached_property", "setter"})

    out = []
    for path, tree in trees.items():
        if str(path) not in homes:
            continue
        module = str(path.relative_to(package.parent))
        for node in tree.body:
            if getattr(node, "name", "") not in public:
                continue
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") and (need := _documented(node)):
                out.append((module, node.name, need))
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                for method in node.body:
                    if not isinstance(method, ast.FunctionDef) or method.name.startswith("_") or is_property(method):
                        continue
                    if not inherited(node, method.name) and (need := _documented(method)):
                        out.append((module, f"{node.name}.{method.name}", need))
    return out


def test_every_public_function_says_its_parameters_and_returns():
    """Numpydoc sections on the public API (what ``benchcast.__all__`` names, issue 30): 'Parameters' where a
    function or public method takes arguments, 'Returns' where it returns a value. A method that overrides a
    benchcast base class's is documented there; properties are exempt."""
    missing = _missing_docs(pathlib.Path(bc.__file__).parent)
    assert not missing, "\n".join(f"{module}: {name} lacks {what}" for module, name, what in missing)


SETTINGS = {
    "n_boot": "n_boot",
    "level": "level",
    "levels": "level",
    "interval": "interval",
    "seed": "seed",
    "n_jobs": "n_jobs",
    "ray_address": "ray_address",
}


def test_no_signature_carries_more_than_two_of_the_six_settings():
    """Replicates, level, interval method and seed travel as one ``Uncertainty``; where to run (``n_jobs``,
    ``ray_address``) is an argument of the call: no function takes more than two of the six loose."""
    root = pathlib.Path(bc.__file__).parent
    offenders = set()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                if len({SETTINGS[a.arg] for a in args if a.arg in SETTINGS}) > 2:
                    offenders.add(f"{path.relative_to(root).as_posix()}:{node.name}")
    assert offenders == set(), "signatures repeating the settings loose"
