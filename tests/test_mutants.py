"""The shared mutator (grpo_wb.tasks.mutants): each family plants its bug, docstrings stay, choices are seeded,
no-op and duplicate mutants are dropped, and the mock backend's wrong answers are what they always were."""

import ast
import hashlib
import random

import pytest
from conftest import TOY

from grpo_wb.rollouts.mock import MockBackend, _mutant
from grpo_wb.rollouts.types import RolloutRequest
from grpo_wb.tasks import mutants as mutants_module
from grpo_wb.tasks.mutants import ALL, Mutant, mock_mutant, mutants, mutate, sites
from grpo_wb.tasks.records import load_tasks

PROGRAM = '''\
def helper(xs):
    """Sum the items 1 < 2 and True: this docstring is never mutated."""
    total = 0
    for i in range(0, len(xs)):
        total += xs[i] * 2
    return total


def f(a, b):
    """Compare a and b."""
    if a < b and not a:
        return max(a, b)
    while a in b:
        a = a - 1
    return a[1:3] if a is None else False
'''


def _unparsed(src: str) -> str:
    return ast.unparse(ast.parse(src))


@pytest.mark.parametrize(
    "family,before,after",
    [
        ("arith", "total += xs[i] * 2", "total -= xs[i] * 2"),
        ("arith", "total += xs[i] * 2", "total += xs[i] / 2"),
        ("compare", "if a < b", "if a <= b"),
        ("compare", "while a in b", "while a not in b"),
        ("compare", "a is None", "a is not None"),
        ("bool", "a < b and (not a)", "a < b or not a"),
        ("bool", "a < b and (not a)", "a < b and a"),
        ("bool", "else False", "else True"),
        ("const", "total = 0", "total = 1"),
        ("const", "total = 0", "total = -1"),
        ("bound", "range(0, len(xs))", "range(0, len(xs) + 1)"),
        ("bound", "a[1:3]", "a[1:2]"),
        ("negate", "if a < b and (not a)", "if not (a < b and (not a))"),
        ("negate", "while a in b", "while not a in b"),
        ("negate", "a[1:3] if a is None", "a[1:3] if not a is None"),
        ("delete", "a = a - 1", "pass"),
        ("early-return", '"""Compare a and b."""\n    if', '"""Compare a and b."""\n    return None\n    if'),
        ("early-return", "return total", "return None"),
        ("swap-args", "max(a, b)", "max(b, a)"),
    ],
)
def test_each_family_plants_its_bug(family, before, after):
    original = _unparsed(PROGRAM)
    assert before in original
    texts = [mutate(PROGRAM, s) for s in sites(PROGRAM, operators=[family])]
    assert all(s.operator == family for s in sites(PROGRAM, operators=[family]))
    assert any(after in t and t != original for t in texts), (family, after)


def test_sites_name_the_operator_the_change_and_the_line():
    by_desc = {s.description: s for s in sites(PROGRAM)}
    s = by_desc["`<` -> `<=` at line 11"]
    assert (s.operator, s.line, s.function) == ("compare", 11, "f")
    assert {s.operator for s in sites(PROGRAM)} == set(ALL)


def test_docstrings_and_strings_are_never_touched():
    src = PROGRAM + '\nMSG = "x < 1 and True"\n'
    tree = ast.parse(src)
    docs = [ast.get_docstring(n) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Module))]
    strings = sorted(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    for s in sites(src):
        mutated = ast.parse(mutate(src, s))
        assert [
            ast.get_docstring(n) for n in ast.walk(mutated) if isinstance(n, (ast.FunctionDef, ast.Module))
        ] == docs, s
        if s.operator != "delete":  # deleting `MSG = ...` takes its string along
            assert (
                sorted(n.value for n in ast.walk(mutated) if isinstance(n, ast.Constant) and isinstance(n.value, str))
                == strings
            ), s


def test_annotations_are_not_mutated():
    assert (
        sites("def f(x: 'int' = 1) -> 2:\n    return x\n", operators=["const"])[0].description == "`1` -> `2` at line 1"
    )
    assert len(sites("def f(x: 'int' = 1) -> 2:\n    return x\n", operators=["const"])) == 2


def test_mutants_are_seeded_bounded_and_spread_across_families():
    first = mutants(PROGRAM, 6, seed=3)
    assert first == mutants(PROGRAM, 6, seed=3)
    assert len(first) == 6 and all(isinstance(m, Mutant) for m in first)
    assert len({m.operator for m in first}) == 6  # round-robin: six families before any repeats
    assert [m.source for m in mutants(PROGRAM, 6, seed=4)] != [m.source for m in first]
    assert mutants(PROGRAM, 0) == []
    with pytest.raises(ValueError, match="n must be"):
        mutants(PROGRAM, -1)


def test_operators_filter_and_unknown_operator():
    assert {m.operator for m in mutants(PROGRAM, 50, operators=["compare", "bool"])} == {"compare", "bool"}
    with pytest.raises(ValueError, match="unknown mutation operator"):
        sites(PROGRAM, operators=["arith", "nope"])


def test_duplicate_mutants_are_dropped():
    """``range(0, n)``'s bound 0 -> 1 folds to the ``const`` mutant 0 -> 1, and ``if not x`` negated is the
    ``bool`` mutant ``not x`` -> ``x``: one of each pair is kept."""
    src = "def f(n, x):\n    n += 1\n    if not x:\n        return list(range(0, n))\n    return n\n"
    all_sites = sites(src)
    found = mutants(src, len(all_sites), seed=0)
    dumps = [ast.dump(ast.parse(m.source)) for m in found]
    assert len(set(dumps)) == len(dumps) and ast.dump(ast.parse(_unparsed(src))) not in dumps
    assert len(found) < len(all_sites)
    texts = [m.source for m in found]
    assert sum("range(1, n)" in t for t in texts) == 1
    assert sum("if x:" in t for t in texts) == 1


def test_mutants_equal_to_the_original_are_dropped(monkeypatch):
    monkeypatch.setattr(mutants_module, "mutate", lambda source, site: _unparsed(source))
    assert mutants(PROGRAM, 5) == []


def test_every_mutant_compiles_and_its_diff_shows_the_change():
    for m in mutants(PROGRAM, 1000, seed=1):
        compile(m.source, "<mutant>", "exec")
        assert m.diff.startswith("--- original\n+++ mutant\n@@ ") and "\n+ " in m.diff
        assert m.description.endswith(f"at line {m.line}")


def test_unparsable_source_is_a_value_error_naming_the_line():
    with pytest.raises(ValueError, match=r"does not parse: .* \(line 3\)"):
        sites("x = 1\ny = 2\ndef f(:\n")
    with pytest.raises(ValueError, match=r"\(line 1\)"):
        mutants("return +", 3)


def test_a_script_is_mutated_whole():
    script = "import sys\nn = int(sys.stdin.readline())\nfor i in range(n):\n    print(i * 2)\nprint('done')\n"
    found = sites(script)
    assert found and all(s.function is None for s in found)
    texts = [m.source for m in mutants(script, 20)]
    assert "for i in range(n + 1):" in "\n".join(texts) and "print(i / 2)" in "\n".join(texts)


def test_entry_point_puts_function_sites_first_and_keeps_indices():
    src = "LIMIT = 10\n\ndef g(x):\n    return x + 1\n\ndef f(x):\n    return g(x) < LIMIT\n\nprint(f(3) - 1)\n"
    plain, ordered = sites(src), sites(src, entry_point="f")
    assert sorted(plain, key=lambda s: s.index) == sorted(ordered, key=lambda s: s.index)
    inside = [s.function is not None for s in ordered]
    assert inside == sorted(inside, reverse=True) and {"f", "g"} <= {s.function for s in ordered}
    assert mutate(src, ordered[0]) == mutate(src, plain[ordered[0].index])


def test_a_site_of_another_source_is_refused():
    s = sites(PROGRAM)[-1]
    with pytest.raises(ValueError, match="not a mutation site"):
        mutate("x = 1\n", s)


# ------------------------------------------------------------------ the mock backend's operator set


def test_mock_mutant_is_pinned_to_the_mock_backends_historical_output():
    """The digest of the mock's mutants on the toy tasks, seeds 0..20, as its own mutator made them before it
    moved here: mock runs replay unchanged (a changed digest changes every recorded mock run)."""
    h = hashlib.sha256()
    for t in load_tasks(TOY):
        for seed in range(21):
            h.update(repr(_mutant(t, random.Random(seed))).encode())
    assert h.hexdigest() == "017d3a2509fec2d231d207dada2e44374b45b70205fb9497716a3d4b1e3d5f0a"
    add = next(t for t in load_tasks(TOY) if t.task_id == "toy/add")
    assert _mutant(add, random.Random(1)).endswith('"""Return the sum of a and b."""\n    return a - b')


def test_mock_mutant_counts_every_return_and_only_the_first_comparison():
    src = "def f(x):\n    if 0 < x < 5:\n        return None\n    return x * 3\n"
    outs = {mock_mutant(src, "f", random.Random(seed)) for seed in range(200)}
    # sites: 0 +1, `<` (first only), 5 +1, return None, `*` -> `+`, 3 +1, return x -> None
    assert len(outs) == 7
    assert "def f(x):\n    if 0 <= x < 5:\n        return None\n    return x * 3" in outs
    assert "def f(x):\n    if 0 < x < 5:\n        return None\n    return x + 3" in outs
    assert mock_mutant(src, "g", random.Random(0)) is None
    assert mock_mutant("def f():\n    pass\n", "f", random.Random(0)) is None


def test_the_mock_backend_still_writes_mutated_wrong_answers():
    tasks = load_tasks(TOY)
    groups = MockBackend(seed=0, default_skill=0.0).generate([RolloutRequest(t, 16, 0, 0) for t in tasks])
    wrong = [(t, c) for t, grp in zip(tasks, groups) for c in grp if c.extra["mock_kind"] == "wrong"]
    assert len(wrong) > 10
    for t, c in wrong:
        code = c.text.removeprefix("```python\n").removesuffix("```").strip()
        ast.parse(code)
        assert _unparsed(code) != _unparsed(t.prompt + t.canonical_solution)
