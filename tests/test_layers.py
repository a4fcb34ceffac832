"""The package's shape: layers as a contract (import-linter), no import cycle, no import hidden in a function."""

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from grpo_wb.cli.main import REGISTRY

PKG = ROOT / "grpo_wb"
REGISTERED = {r.words: r.module for r in REGISTRY}
# grpo_wb modules a function may import lazily: each is an optional extra's entry, imported when it is used; and the
# imports by name (importlib.import_module of a computed name, BY_NAME) that are not a hidden edge between layers
BY_NAME = "<a module by name>"
LAZY_OK = {
    ("grpo_wb/cli/train.py", "grpo_wb.training.train"),
    # the command line's dispatch: `grpo-wb --help` imports no command's implementation, and a command line imports
    # the module of the command it runs only (docs/layout.md). It imports modules of grpo_wb.cli only, from
    # grpo_wb.cli.main (test_the_dispatch_imports_command_modules_only): within the top layer, which may import
    # every layer, so no back edge hides here; each command module's own imports are at module level, where
    # import-linter and the cycle check see them.
    ("grpo_wb/cli/main.py", BY_NAME),
    # the names notebooks import from grpo_wb, each looked up on first use (grpo_wb/__init__.py's _NAMES)
    ("grpo_wb/__init__.py", BY_NAME),
    # errors.require: an optional extra (torch, ray, ...), named by its caller
    ("grpo_wb/errors.py", BY_NAME),
    # the audit's driver, in a sandbox child: the reward function under test, named by the job
    ("grpo_wb/reward_audit/_driver.py", BY_NAME),
}


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
    # importlib.import_module calls: a grpo_wb name given literally is that module; any other expression, BY_NAME
    in_function = {
        id(d)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for d in ast.walk(n)
        if d is not n
    }
    out = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
        ):
            arg = node.args[0]
            name = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else BY_NAME
            if name == BY_NAME or name.startswith("grpo_wb"):
                out.append((name, id(node) not in in_function))
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


def _modules() -> list[Path]:
    """The package's own modules: not the public code it carries as data (grpo_wb/data: reward harnesses)."""
    return sorted(f for f in PKG.rglob("*.py") if PKG / "data" not in f.parents)


def test_no_import_cycle_among_the_modules():
    files = _modules()
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
    entry points are imported where they are used, and modules by name (importlib.import_module) only where
    LAZY_OK says why: the command line's dispatch among them."""
    hidden = [(str(f.relative_to(ROOT)), m) for f in _modules() for m, top in _imports(f) if not top]
    assert set(hidden) <= LAZY_OK, hidden
    assert ("grpo_wb/cli/main.py", BY_NAME) in hidden, "the check no longer sees importlib.import_module"


# what `grpo-wb --help` must not load: the training extras, the analysis libraries only some commands use, and
# pydantic (the formats' schemas, loaded by the first record read)
HEAVY = ("torch", "transformers", "trl", "peft", "ray", "scipy", "matplotlib", "pandas", "pyarrow", "numpy", "pydantic")
# nor any command's implementation: every room below the command line (grpo_wb.cli.main registers each command by
# name and imports its module when it is chosen; the command modules, grpo_wb.cli.*, are checked apart)
ROOMS = (
    "grpo_wb.formats",
    "grpo_wb.tasks",
    "grpo_wb.rollouts",
    "grpo_wb.scoring",
    "grpo_wb.signal",
    "grpo_wb.testing",
    "grpo_wb.runs",
    "grpo_wb.reports",
    "grpo_wb.training",
    "grpo_wb.reward_audit",
    "grpo_wb.bench",
)
# what a command that does not use them must not load when it is chosen: another command's implementation (the
# reward audit, the benches, the row formats, the tasks audit, the batch runner, training) and the libraries of
# analyses, plots and training
OTHERS = (
    "grpo_wb.reward_audit",
    "grpo_wb.bench",
    "grpo_wb.tasks.rowformats",
    "grpo_wb.runs.task_audit",
    "grpo_wb.reports.batch",
    "grpo_wb.training",
    "torch",
    "transformers",
    "trl",
    "ray",
    "pandas",
    "scipy",
    "matplotlib",
    "pyarrow",
)

_LOADED = """
import sys, types
def loaded(name):
    # a lazy_loader placeholder is in sys.modules before its first use: loaded means executed
    m = sys.modules.get(name)
    return m is not None and type(m).__name__ != "_LazyModule" or any(k.startswith(name + ".") for k in sys.modules)
"""


def _loaded_by(argv: list[str], names: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """``grpo-wb ARGV`` run in a fresh interpreter: which of ``names`` it loaded, and which modules of grpo_wb.cli
    besides main (and the package)."""
    code = (
        _LOADED + f"sys.argv = ['grpo-wb', *{argv!r}]\nfrom grpo_wb.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        f"print([h for h in {names!r} if loaded(h)])\n"
        "print(sorted(m for m in sys.modules if m.startswith('grpo_wb.cli.') and m != 'grpo_wb.cli.main'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    heavy, cli = out.stdout.strip().splitlines()[-2:]
    return ast.literal_eval(heavy), ast.literal_eval(cli)


@pytest.mark.parametrize("argv", [["--help"], ["tasks", "--help"]], ids=" ".join)
def test_the_command_line_starts_without_heavy_imports(argv):
    """``grpo-wb --help`` loads neither the training extras nor scipy, matplotlib, pandas or numpy, nor any command's
    implementation: every CLI call (and every subprocess test) would otherwise pay for them (the audit once pulled in
    torch through the bridge; the plan command scipy.stats; the plots matplotlib; every command module imported at
    start, the reward audit's battery, the benches, the row formats and the tasks audit, cost 1.1 CPU s)."""
    heavy, cli = _loaded_by(argv, HEAVY + ROOMS)
    assert heavy == [], f"grpo-wb {' '.join(argv)} loads {heavy}"
    assert cli == [], f"grpo-wb {' '.join(argv)} imports the command modules {cli}"


@pytest.mark.parametrize(
    "words",
    [("tasks", "validate"), ("tasks", "calibrate"), ("score",), ("smoke",), ("report",), ("doctor",)],
    ids=" ".join,
)
def test_a_command_imports_what_it_runs_only(words):
    """A command's own ``--help`` (its flags, from its arguments dataclass) imports its module and what that runs:
    not another command's implementation, nor the analysis, plotting or training libraries it does not use."""
    others, cli = _loaded_by([*words, "--help"], OTHERS)
    assert others == [], f"grpo-wb {' '.join(words)} --help loads {others}"
    assert {m.rsplit(".", 1)[1] for m in cli} - {"common", "headroom"} == {REGISTERED[words]}, cli


@pytest.mark.parametrize("name", ["reward-audit", "audit"])
def test_the_import_check_sees_the_chosen_command(name):
    """The control: choosing ``reward-audit`` (or its old name, ``audit``) loads the reward audit (what the check
    above looks for is what a command that runs it loads)."""
    others, cli = _loaded_by([name, "--help"], OTHERS)
    assert "grpo_wb.reward_audit" in others and "grpo_wb.cli.reward_audit" in cli, (others, cli)


def test_the_dispatch_imports_command_modules_only():
    """What grpo_wb.cli.main imports by name (LAZY_OK) is a module of grpo_wb.cli, one file each."""
    for r in REGISTRY:
        assert (PKG / "cli" / f"{r.module}.py").is_file(), r


def test_the_heavy_import_check_sees_a_heavy_import():
    """The control: the same check, after a real import of pandas and matplotlib, names them."""
    code = (
        _LOADED + "import pandas, matplotlib.figure\nprint([h for h in ('pandas', 'matplotlib', 'scipy') if loaded(h)])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "['pandas', 'matplotlib']", out.stdout + out.stderr


# the programs kept as files (grpo_wb.tasks.sandbox_programs) are data, not modules: import-linter does not see them
PROGRAM_FILES = sorted(
    [*(PKG / "tasks" / "rowformats" / "programs").glob("*.py"), *(PKG / "runs" / "programs").glob("*.py")]
)
IN_SANDBOX = [*sorted((PKG / "scoring" / "worker").glob("*.py")), PKG / "reward_audit" / "_driver.py", *PROGRAM_FILES]


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
    """The worker's modules, the audit's driver and the programs kept as files (the KodCode pytest helpers, the
    tasks audit's equivalence search) run in a child started with ``-S`` (no site-packages) and must not hand a
    completion anything of grpo_wb: standard library and the worker's own ``wb_*`` siblings only. (The import-linter
    contract says the same about grpo_wb's modules; this also covers third-party packages, and the program files,
    which import-linter does not see.)"""
    siblings = {p.stem for p in (PKG / "scoring" / "worker").glob("wb_*.py")}
    assert len(IN_SANDBOX) >= 6 and siblings and len(PROGRAM_FILES) >= 3
    bad = {
        str(p.relative_to(ROOT)): sorted(_all_imports(p) - set(sys.stdlib_module_names) - siblings) for p in IN_SANDBOX
    }
    assert not any(bad.values()), bad


def _layout_drawing() -> dict[str, str]:
    """docs/layout.md's tree: each top-level entry (``name/`` or the base modules) and the text drawn for it."""
    text = (ROOT / "docs" / "layout.md").read_text()
    block = text.split("```\ngrpo_wb/\n", 1)[1].split("```", 1)[0]
    sections: dict[str, str] = {"": ""}
    current = ""
    for line in block.splitlines():
        head = re.match(r"  (\w+)/", line)
        if head:
            current = head.group(1)
            sections[current] = line[head.end() :]
        elif re.match(r"  \w+\.py", line):
            current = ""
            sections[""] += " " + line
        else:
            sections[current] += " " + line
    return sections


def test_the_tree_in_docs_layout_is_the_codes():
    """Every folder of the package is drawn, every module is named under its folder, nested folders too; and
    nothing drawn is missing from the code."""
    drawn = _layout_drawing()
    pkg = ROOT / "grpo_wb"
    folders = {p.name for p in pkg.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert set(drawn) - {""} == folders
    words = {name: set(re.findall(r"\w+", text)) for name, text in drawn.items()}
    missing = []
    for py in pkg.rglob("*.py"):
        rel = py.relative_to(pkg)
        if rel.parts[0] in ("data",) or "exploits" in rel.parts or "programs" in rel.parts or py.stem == "__init__":
            continue
        section = "" if len(rel.parts) == 1 else rel.parts[0]
        # a module of a nested folder is drawn by its folder's name (worker/, refs/) or by its own name
        if py.stem not in words[section] and not (len(rel.parts) > 2 and rel.parts[1] in words[section]):
            missing.append(str(rel))
    assert not missing, f"modules not drawn in docs/layout.md: {missing}"
    for section, text in drawn.items():
        for nested in re.findall(r"(?<![\w/-])(\w+)/(?=[\s),])", text):
            assert any(p.is_dir() for p in pkg.glob(f"{section}/**/{nested}" if section else nested)), (
                f"docs/layout.md draws {section}/.../{nested}/, which the code does not have"
            )
