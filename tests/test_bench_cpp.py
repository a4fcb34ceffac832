"""`grpo-wb bench --set cpp` with a few solutions: the real entry point, the three scorers, their agreement; the
plain loop's output comparison against grpo_wb's port of the same rule.

No speed is asserted here (shared machines are noisy); the benchmark itself prints the figures.
"""

from __future__ import annotations

import re

import pytest

from grpo_wb.bench.cpp import load_solutions, plain_output_matches
from grpo_wb.cli.main import main
from grpo_wb.scoring.verdicts import codeforces_output_matches


@pytest.mark.parametrize(
    "output, expected, same",
    [
        ("3\n", "3\n", True),
        ("1 2\n3", "1\n2   3\n\n", True),  # tokens: newlines, runs of spaces and blank lines alike
        ("", "\n\n", True),
        ("yes\n", "YES\n", True),  # whole-word yes/no in any case (Piston's codeforces package)
        ("Yes, no.\n", "YES, NO.\n", True),
        ("yesno\n", "YESNO\n", False),  # not a whole word: case counts
        ("Impossible\n", "impossible\n", False),  # only yes/no are case-folded
        ("12\n", "1 2\n", False),
        ("1 2\n", "1 2 3\n", False),  # no cut to the shorter output
        ("0.5\n", "0.50\n", False),  # no float tolerance: compared as text
    ],
)
def test_the_plain_loop_compares_as_pistons_codeforces_package_does(output, expected, same):
    assert plain_output_matches(output, expected) is same
    assert codeforces_output_matches(output, expected) is same  # grpo_wb's port of the same rule agrees


@pytest.mark.data
def test_the_bundled_solutions_load_as_cpp_tasks_mixing_problems_and_labels():
    sols, notes = load_solutions()
    assert len(sols) == 102 and {s.label for s in sols} == {"correct", "incorrect"}
    assert sum(n.startswith("left out: ") for n in notes) == 4  # E, I, L and `different`: their own validators
    assert all(s.task.language == "cpp" and s.task.output_match == "codeforces" for s in sols)
    assert [(s.task.task_id, s.label) for s in sols[:4]] == [
        ("nwerc2022/A", "correct"),
        ("nwerc2022/A", "incorrect"),
        ("nwerc2022/B", "correct"),
        ("nwerc2022/B", "incorrect"),
    ]


@pytest.mark.sandbox
@pytest.mark.data
@pytest.mark.slow
def test_bench_cpp_scores_a_few_solutions_three_ways_and_they_agree(capsys):
    assert main(["bench", "--set", "cpp", "--limit", "4", "--workers", "2"]) in (0, None)
    out = capsys.readouterr().out
    assert "== cpp: 4 C++ solutions of 2 problems (2 the jury accepts, 2 it does not)" in out, out
    for scorer in (
        "plain loop (g++, subprocess)",
        "grpo_wb, no header, no cache",
        "grpo_wb, header + cache, cold",
        "grpo_wb, header + cache, warm (a re-score)",
    ):
        # solutions, passed, wall, completions/s, compile median and p90, speed-up, agreement with the plain loop
        row = re.search(
            re.escape(scorer) + r" +4 +\d +[\d.]+ +[\d.]+ +(?:[\d.]+|n/a) +(?:[\d.]+|n/a) +[\d.]+x +4/4", out
        )
        assert row, (scorer, out)
    assert "disagrees:" not in out, out
    assert "grpo_wb, no header, no cache: 4 compiles, 0 from the disk cache; precompiled header off" in out, out
    assert "grpo_wb, header + cache, cold: 4 compiles, 0 from the disk cache" in out, out
    assert "grpo_wb, header + cache, warm (a re-score): 0 compiles, 4 from the disk cache" in out, out
    warm = next(line for line in out.splitlines() if line.startswith("grpo_wb, header + cache, warm"))
    assert " n/a    n/a " in warm, warm  # no compile: no compile seconds to report
