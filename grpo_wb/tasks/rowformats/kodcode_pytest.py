"""KodCode's pytest modules run without pytest: :func:`_pytest_tests` reads a test module into the task's
``test_setup`` and one test per test function, test method and parameter set, each a line of code that calls it
the way pytest would (marks, fixtures, xunit setup, test classes, ``unittest.TestCase`` subclasses).

The helpers those lines call run in the sandbox; they are programs kept as files (``programs/pytest_helpers.py``,
``programs/pytest_intact.py``, read by :func:`grpo_wb.tasks.sandbox_programs.program_text`) and appended to the
setup byte for byte.
"""

from __future__ import annotations

import ast
from typing import Any

from grpo_wb.tasks.records import TestCase
from grpo_wb.tasks.rowformats.common import RowError
from grpo_wb.tasks.sandbox_programs import program_text


def _imported_modules(src: str) -> set[str]:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return set()
    return {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | {
        n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
    }


def _solution_imports(test: str) -> list[str]:
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return []
    return [
        a.name
        for n in tree.body
        if isinstance(n, ast.ImportFrom) and n.module == "solution"
        for a in n.names
        if a.name != "*"
    ]


#: run in the child before each test of a module that has test classes or marks (see :func:`_pytest_tests`)
_PYTEST_HELPERS = program_text("grpo_wb.tasks.rowformats", "programs/pytest_helpers.py")

#: run after a test module that imports pytest: an answer that rebinds ``pytest.raises`` & co. fails
_PYTEST_INTACT = program_text("grpo_wb.tasks.rowformats", "programs/pytest_intact.py")

#: registers the completion's names as a module ``solution`` (before the test module runs)
_SOLUTION_MODULE = (
    "__import__('sys').modules['solution'] = __import__('types').SimpleNamespace("
    "**{k: v for k, v in globals().items() if not k.startswith('__')})"
)

#: pytest's module-level xunit setup and teardown functions (the first of each group that the module defines)
_XUNIT_NAMES = {
    "msetup": ("setUpModule", "setup_module"),
    "mteardown": ("tearDownModule", "teardown_module"),
    "fsetup": ("setup_function",),
    "fteardown": ("teardown_function",),
}


def _xunit(body: list[ast.stmt]) -> dict[str, str]:
    """The module's ``setup_module`` / ``teardown_module`` / ``setup_function`` / ``teardown_function``, by role."""
    defined = {n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found = {}
    for role, names in _XUNIT_NAMES.items():
        name = next((n for n in names if n in defined), None)
        if name:
            found[role] = name
    return found


def _xunit_run(run: str, xunit: dict[str, str] | None, func: str | None = None) -> str:
    """``run`` between the module's xunit setup and teardown (``setup_function``: for test functions only)."""
    roles = {k: v for k, v in (xunit or {}).items() if func is not None or k in ("msetup", "mteardown")}
    if not roles:
        return run
    args = "".join(f", {k}={v}" for k, v in roles.items()) + (
        f", func={func}" if func and ("fsetup" in roles or "fteardown" in roles) else ""
    )
    return f"__grpo_wb_xunit(lambda: {run}{args})"


_UNITTEST_BASES = {"unittest.TestCase", "TestCase", "unittest.IsolatedAsyncioTestCase", "IsolatedAsyncioTestCase"}


def _decorator_name(dec: ast.expr) -> str:
    return ast.unparse(dec.func if isinstance(dec, ast.Call) else dec)


def _mark_kind(dec: ast.expr) -> str:
    """``skip``, ``skipif`` or ``xfail`` for such a ``pytest.mark`` (``mark.`` imported from pytest too), else
    ``""``."""
    name = _decorator_name(dec)
    kind = name.rpartition(".")[2]
    return kind if kind in ("skip", "skipif", "xfail") and name.endswith("mark." + kind) else ""


def _marks(decorators: list[ast.expr]) -> list[ast.expr]:
    """The ``skip`` / ``skipif`` / ``xfail`` marks among ``decorators`` (or a ``pytestmark`` value)."""
    return [d for d in decorators if _mark_kind(d)]


def _pytestmark(body: list[ast.stmt]) -> list[ast.expr]:
    """``pytestmark = mark`` or ``= [marks]`` in a module or class body."""
    marks: list[ast.expr] = []
    for node in body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            v = node.value
            marks += _marks(list(v.elts) if isinstance(v, (ast.List, ast.Tuple)) else [v])
    return marks


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _literal(node: ast.expr | None, default: Any) -> Any:
    if node is None:
        return default
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return node


def _wrap(src: str, run: str, marks: list[ast.expr]) -> str | None:
    """The test's code under its marks, as pytest runs it: None when a ``skip`` (or a literal true ``skipif``,
    or ``xfail(run=False)``) means it never runs; ``xfail`` tests may fail (``raises``: only with that exception;
    ``strict``: and must); ``skipif`` / conditional ``xfail`` apply when any of their conditions holds."""

    def seg(n: ast.expr) -> str:
        return ast.get_source_segment(src, n) or ast.unparse(n)

    skipif: list[str] = []
    xfail: list[str] = []
    for m in marks:
        kind = _mark_kind(m)
        call = m if isinstance(m, ast.Call) else None
        conds = list(call.args) if call else []
        condition = _kw(call, "condition") if call else None
        if condition is not None:
            conds.append(condition)
        if kind == "skip":
            return None
        if kind == "skipif":
            if not conds:
                return None  # pytest: skipif without a condition skips
            if any(_literal(c, None) is True for c in conds):
                return None
            skipif += [seg(c) for c in conds if _literal(c, None) is not False]
            continue
        if call is None:
            xfail.append("((), BaseException, False, True)")
            continue
        if conds and all(_literal(c, None) is False for c in conds):
            continue
        if _literal(_kw(call, "run"), True) is False and not conds:
            return None  # not run: xfailed, whatever the answer
        raises = _kw(call, "raises")
        strict = _kw(call, "strict")
        runs = _kw(call, "run")
        xfail.append(
            f"(({''.join(seg(c) + ', ' for c in conds)}), {seg(raises) if raises else 'BaseException'}, "
            f"{seg(strict) if strict is not None else 'False'}, "
            f"{seg(runs) if runs is not None else 'True'})"
        )
    if not skipif and not xfail:
        return run
    return f"__grpo_wb_run(lambda: {run}, skipif=[{', '.join(skipif)}], xfail=[{', '.join(xfail)}])"


def _class_tests(
    src: str,
    cls: ast.ClassDef,
    classes: dict[str, ast.ClassDef],
    unit: set[str],
    module_marks: list[ast.expr],
    xunit: dict[str, str] | None = None,
    fixtures: dict[str, tuple[str, list[str]]] | None = None,
) -> list[TestCase]:
    """The tests pytest collects from a test class: ``test*`` methods, inherited ones from classes of the module too.

    A ``unittest.TestCase`` subclass runs each method through ``TestCase.debug`` (setUp, tearDown, cleanups,
    ``unittest.skip*`` and ``expectedFailure`` as unittest decides them); a plain ``Test*`` class gets a fresh
    instance per test, with ``setup_class`` / ``setup_method`` and their teardowns."""
    chain, seen = [], set()
    todo = [cls]
    while todo:  # the class and the module's classes it derives from, nearest first
        c = todo.pop(0)
        if c.name in seen:
            continue
        seen.add(c.name)
        chain.append(c)
        todo += [classes[b.id] for b in c.bases if isinstance(b, ast.Name) and b.id in classes]
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for c in chain:
        for node in c.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in methods:
                methods[node.name] = node
    is_unit = cls.name in unit
    class_marks = [m for c in chain for m in _marks(c.decorator_list) + _pytestmark(c.body)]
    tests: list[TestCase] = []
    for name, fn in methods.items():
        if not name.startswith("test"):
            continue
        if is_unit:
            if isinstance(fn, ast.AsyncFunctionDef) and not any(
                ast.unparse(b).endswith("IsolatedAsyncioTestCase") for c in chain for b in c.bases
            ):
                raise RowError(f"{cls.name}.{name}: an async test (not supported)")
            if any(_decorator_name(d) in ("unittest.skip", "skip") for d in fn.decorator_list) or any(
                _decorator_name(d) in ("unittest.skip", "skip") for c in chain for d in c.decorator_list
            ):
                continue  # unittest.skip: never runs
            code = _wrap(
                src,
                _xunit_run(f"__grpo_wb_unittest({cls.name}, {name!r})", xunit),
                _marks(fn.decorator_list) + class_marks + module_marks,
            )
            if code is not None:
                tests.append(TestCase(name=f"{cls.name}::{name}", code=code))
            continue
        static = any(_decorator_name(d) == "staticmethod" for d in fn.decorator_list)
        for suffix, kwargs, used in _expand_test(src, fn, f"{cls.name}.{name}", bound=not static, fixtures=fixtures):
            fx = f", {used!r}" if used else ""
            code = _wrap(
                src,
                _xunit_run(f"__grpo_wb_method({cls.name}, {name!r}, {kwargs or '{}'}{fx})", xunit),
                _marks(fn.decorator_list) + class_marks + module_marks,
            )
            if code is not None:
                tests.append(TestCase(name=f"{cls.name}::{name}{suffix}", code=code))
    return tests


def _is_test_class(node: ast.ClassDef, classes: dict[str, ast.ClassDef], unit: set[str]) -> bool:
    """pytest's rule: any ``unittest.TestCase`` subclass; else a ``Test*`` class without ``__init__``."""
    if any(
        isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__test__" for t in s.targets)
        and _literal(s.value, True) is False
        for s in node.body
    ):
        return False
    if node.name in unit:
        return True
    if not node.name.startswith("Test"):
        return False
    todo, seen = [node], set()
    while todo:
        c = todo.pop()
        if c.name in seen:
            continue
        seen.add(c.name)
        if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__init__" for s in c.body):
            return False  # pytest: "cannot collect test class because it has a __init__ constructor"
        todo += [classes[b.id] for b in c.bases if isinstance(b, ast.Name) and b.id in classes]
    return True


def _autouse(node: ast.AST) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        isinstance(d, ast.Call)
        and _decorator_name(d).endswith("fixture")
        and _literal(_kw(d, "autouse"), False) is not False
        for d in node.decorator_list
    )


def _pytest_tests(module: str) -> tuple[str, list[TestCase]]:
    """A KodCode-style pytest module as (setup, one test per test function, test method and parameter set).

    ``from solution import ...`` lines go (the completion's names are already in scope, as rllm does); other
    imports of ``solution`` (``import solution as s``, ``from solution import f as g``, imports inside a test) find
    a module ``solution`` holding the completion's names. ``@pytest.mark.parametrize`` over a literal list expands;
    the module's own fixtures (plain or yield, asking only for each other) are set up afresh for each test that
    asks for one; a test asking for any other fixture is an error. ``setup_module`` / ``teardown_module`` run
    around every test, ``setup_function`` / ``teardown_function`` around each test function. Test classes
    are collected as pytest does (``Test*`` classes without ``__init__``, and ``unittest.TestCase`` subclasses);
    ``skip`` marks drop a test, ``skipif`` runs it only when its condition is false, and an ``xfail`` test is not
    required to pass (unless ``strict``), as pytest's exit status has it.
    """
    try:
        tree = ast.parse(module)
    except SyntaxError as e:
        raise RowError(f"test module does not compile ({e.msg})") from None
    keep = []
    tests: list[TestCase] = []
    module_marks = _pytestmark(tree.body)
    classes: dict[str, ast.ClassDef] = {}
    unit: set[str] = set()
    collected = 0
    helpers = False
    # `import solution (as s)`, `from solution import f as g` and imports inside a test need a module named
    # solution: the completion's names, registered before the test module runs
    top = set(map(id, tree.body))
    needs_module = any(
        isinstance(n, ast.Import)
        and any(a.name == "solution" for a in n.names)
        or isinstance(n, ast.ImportFrom)
        and n.module == "solution"
        and (id(n) not in top or any(a.asname not in (None, a.name) for a in n.names))
        for n in ast.walk(tree)
    )
    xunit = _xunit(tree.body)
    fixtures = _fixtures(tree.body)
    if needs_module:
        keep.append(ast.parse(_SOLUTION_MODULE).body[0])
    for node in tree.body:
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "solution"
            and all(a.asname in (None, a.name) for a in node.names)
        ):
            continue  # the names are in scope already
        keep.append(node)
        if _autouse(node) or isinstance(node, ast.ClassDef) and any(_autouse(n) for n in node.body):
            raise RowError(f"an autouse fixture ({getattr(node, 'name', '?')}), which grpo_wb does not run")
        if isinstance(node, ast.ClassDef):
            classes[node.name] = node
            if any(ast.unparse(b) in _UNITTEST_BASES or (isinstance(b, ast.Name) and b.id in unit) for b in node.bases):
                unit.add(node.name)
            if _is_test_class(node, classes, unit):
                if any(_decorator_name(d).endswith("parametrize") for d in node.decorator_list):
                    raise RowError(f"{node.name}: a parametrized test class (not supported)")
                collected += sum(
                    isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")
                    for n in node.body
                )
                tests += _class_tests(module, node, classes, unit, module_marks, xunit, fixtures)
                helpers = True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            if isinstance(node, ast.AsyncFunctionDef):
                raise RowError(f"{node.name}: an async test (pytest needs a plugin to run it)")
            collected += 1
            marks = _marks(node.decorator_list) + module_marks
            for suffix, kwargs, used in _expand_test(module, node, node.name, fixtures=fixtures):
                run = f"{node.name}(**{kwargs})" if kwargs else f"{node.name}()"
                if used:
                    given = f"**{kwargs}, " if kwargs else ""
                    run = f"__grpo_wb_fixtures(lambda fx: {node.name}({given}**fx), {used!r})"
                if xunit:
                    run = _xunit_run(run, xunit, node.name)
                code = _wrap(module, run, marks)
                if code is not None:
                    helpers = helpers or code != run or bool(xunit) or bool(used)
                    tests.append(TestCase(name=node.name + suffix, code=code))
    if not tests:
        raise RowError("every test is skipped" if collected else "the test module defines no test functions")
    setup = ast.unparse(ast.Module(body=keep, type_ignores=[]))
    if "pytest" in _imported_modules(module):
        setup += "\n" + _PYTEST_INTACT
    if any("__grpo_wb_fixtures(" in t.code for t in tests):
        setup += (
            "\n__grpo_wb_fixture_spec = {"
            + ", ".join(f"{k!r}: ({f}, {deps!r})" for k, (f, deps) in fixtures.items())
            + "}"
        )
    return (setup + "\n" + _PYTEST_HELPERS if helpers else setup), tests


def _fixture_decorator(fn: ast.AST) -> ast.expr | None:
    return next(
        (d for d in getattr(fn, "decorator_list", ()) if _decorator_name(d) in ("pytest.fixture", "fixture")), None
    )


def _fixtures(body: list[ast.stmt]) -> dict[str, tuple[str, list[str]]]:
    """The module's own fixtures grpo_wb can set up: fixture name -> (function name, the fixtures it asks for).
    Those with ``params``, async ones, and those asking for a fixture the module does not define are left out
    (a test asking for one is refused)."""
    found: dict[str, tuple[str, list[str]]] = {}
    for node in body:
        dec = _fixture_decorator(node)
        if dec is None or not isinstance(node, ast.FunctionDef):
            continue
        call = dec if isinstance(dec, ast.Call) else None
        if call is not None and (_kw(call, "params") is not None or call.args):
            continue
        name = _literal(_kw(call, "name"), None) if call is not None else None
        args = [a.arg for a in node.args.args]
        found[name if isinstance(name, str) else node.name] = (node.name, args[: len(args) - len(node.args.defaults)])
    ok: dict[str, tuple[str, list[str]]] = {}
    changed = True
    while changed:  # keep those whose dependencies are all kept
        changed = False
        for k, (f, deps) in found.items():
            if k not in ok and all(d in ok and d != k for d in deps):
                ok[k] = (f, deps)
                changed = True
    return ok


def _expand_test(
    src: str,
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    where: str,
    bound: bool = False,
    fixtures: dict[str, tuple[str, list[str]]] | None = None,
) -> list[tuple[str, str, list[str]]]:
    """``(name suffix, keyword-arguments source, the module fixtures it asks for)`` per parameter set of a test
    (``("", "", [])`` when it has none); ``bound``: a method, whose first argument is the instance."""
    if isinstance(fn, ast.AsyncFunctionDef):
        raise RowError(f"{where}: an async test (pytest needs a plugin to run it)")
    params = [a.arg for a in fn.args.args][1 if bound else 0 :]
    n_defaults = len(fn.args.defaults)
    if n_defaults:  # arguments with defaults are not fixtures
        params = params[:-n_defaults] if n_defaults < len(params) else []
    cases: list[str] = []
    stacked = [d for d in fn.decorator_list if _decorator_name(d).endswith("parametrize")]
    if len(stacked) > 1:
        raise RowError(f"{fn.name}: stacked parametrize decorators (not supported)")
    for dec in fn.decorator_list:
        call = dec if isinstance(dec, ast.Call) else None
        target = _decorator_name(dec)
        if not target.endswith("parametrize") or call is None:
            continue
        if (
            len(call.args) < 2
            or not isinstance(call.args[0], ast.Constant)
            or not isinstance(call.args[1], (ast.List, ast.Tuple))
        ):
            raise RowError(f"{fn.name}: parametrize over something other than a literal list")
        names = [n.strip() for n in str(call.args[0].value).split(",") if n.strip()]
        if not names:
            raise RowError(f"{fn.name}: parametrize without argument names")
        for elt in call.args[1].elts:
            if isinstance(elt, ast.Call) and ast.unparse(elt.func).endswith("param"):
                raise RowError(f"{fn.name}: pytest.param cases (not supported)")
            values = ast.get_source_segment(src, elt) or ast.unparse(elt)
            if len(names) > 1:
                cases.append(f"dict(zip({names!r}, {values}))")
            else:
                cases.append(f"{{{names[0]!r}: {values}}}")
        params = [p for p in params if p not in names]
    used = [p for p in params if p in (fixtures or {})]
    params = [p for p in params if p not in used]
    if params:
        raise RowError(f"{fn.name} asks for pytest fixture {params[0]!r}, which grpo_wb does not provide")
    if not cases:
        return [("", "", used)]
    return [("" if len(cases) == 1 else f"[{i}]", c, used) for i, c in enumerate(cases)]
