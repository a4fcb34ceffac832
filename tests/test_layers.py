"""The package's shape: layers as a contract (import-linter), no import cycle, no import hidden in a function."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

PKG = ROOT / "grpo_wb"
# grpo_wb modules a function may import lazily: each is an optional extra's entry, imported when it is used
LAZY_OK = {("grpo_wb/cli/train.py", "grpo_wb.training.train")}


def _module(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _imports(path: Path) -> list[tuple[str, bool]]:
    """``(module, at module level)`` for each grpo_wb import of the file (``from pkg import mod``: ``pkg.mod``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    # a module-level ``if TYPE_CHECKING:`` import is a module-level edge too (what a lazy_loader.load beside it
    # loads at run time): import-linter sees it, and so does the cycle check here
    top |= {
        id(m)
        for n in tree.body
        if isinstance(n, ast.If) and isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING"
        for m in n.body
    }
    out = []
    here = _module(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:  # relative: resolve it, so it is checked the same
            base = ".".join(package[: len(package) - (node.level - 1)] + ([node.module] if node.module else []))
        else:
            base = node.module if isinstance(node, ast.ImportFrom) else None
        if isinstance(node, ast.ImportFrom) and base and base.startswith("grpo_wb"):
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append((sub if _is_module(sub) else base, id(node) in top))
        elif isinstance(node, ast.Import):
            out += [(a.name, id(node) in top) for a in node.names if a.name.startswith("grpo_wb")]
    return out


def test_the_layer_contract_holds():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is part of the dev extra"
    p = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-3000:]
    assert "0 broken" in p.stdout


def test_no_import_cycle_among_the_modules():
    files = sorted(PKG.rglob("*.py"))
    names = {_module(f): f for f in files}
    graph = {m: {i for i, top in _imports(f) if top and i in names and i != m} for m, f in names.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(m, stack):
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                visit(n, stack + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == [], cycles


def test_no_module_imports_grpo_wb_inside_a_function():
    """A function-level import to dodge a cycle would hide a back edge from the contract; only optional extras'
    entry points are imported where they are used."""
    hidden = [(str(f.relative_to(ROOT)), m) for f in sorted(PKG.rglob("*.py")) for m, top in _imports(f) if not top]
    assert set(hidden) <= LAZY_OK, hidden


# what `grpo-wb --help` must not load: the training extras, the analysis libraries only some commands use, and
# pydantic (the formats' schemas, loaded by the first record read)
HEAVY = ("torch", "transformers", "trl", "peft", "ray", "scipy", "matplotlib", "pandas", "pyarrow", "numpy", "pydantic")

_LOADED = """
import sys, types
def loaded(name):
    # a lazy_loader placeholder is in sys.modules before its first use: loaded means executed
    m = sys.modules.get(name)
    return m is not None and type(m).__name__ != "_LazyModule" or any(k.startswith(name + ".") for k in sys.modules)
"""


def test_the_command_line_starts_without_heavy_imports():
    """``grpo-wb --help`` loads neither the training extras nor scipy, matplotlib or pandas: every CLI call (and
    every subprocess test) would otherwise pay seconds for them (the audit once pulled in torch through the bridge;
    the plan command scipy.stats; the plots matplotlib)."""
    code = (
        _LOADED + "sys.argv = ['grpo-wb', '--help']\nfrom grpo_wb.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"heavy = [h for h in {HEAVY!r} if loaded(h)]\nprint(heavy, file=sys.stderr)\nsys.exit(1 if heavy else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, f"grpo-wb --help loads {out.stderr.strip()}"


def test_the_heavy_import_check_sees_a_heavy_import():
    """The control: the same check, after a real import of pandas and matplotlib, names them."""
    code = (
        _LOADED + "import pandas, matplotlib.figure\nprint([h for h in ('pandas', 'matplotlib', 'scipy') if loaded(h)])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "['pandas', 'matplotlib']", out.stdout + out.stderr


IN_SANDBOX = [*sorted((PKG / "scoring" / "worker").glob("*.py")), PKG / "audit" / "_driver.py"]


def _all_imports(path: Path) -> set[str]:
    """The top-level names of every module the file imports, wherever (``importlib.import_module`` excepted)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." if node.level else node.module.split(".")[0])
    return names


def test_what_runs_inside_the_sandbox_imports_the_standard_library_only():
    """The worker's modules and the audit's driver run in a child started with ``-S`` (no site-packages) and must
    not hand a completion anything of grpo_wb: standard library and the worker's own ``wb_*`` siblings only.
    (The import-linter contract says the same about grpo_wb; this also covers third-party packages.)"""
    siblings = {p.stem for p in (PKG / "scoring" / "worker").glob("wb_*.py")}
    assert len(IN_SANDBOX) >= 6 and siblings
    bad = {
        str(p.relative_to(ROOT)): sorted(_all_imports(p) - set(sys.stdlib_module_names) - siblings) for p in IN_SANDBOX
    }
    assert not any(bad.values()), bad
