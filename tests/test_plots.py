"""Plot functions return Figures (no pyplot) whose artists reflect the data they were given."""

from __future__ import annotations

import io

import matplotlib
import pytest

matplotlib.use("Agg")  # in-process only; never exported to kernels (MPLBACKEND would silence notebook figures)

import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from nbfixtures import shared_run  # noqa: E402

from grpo_wb.reports import plots  # noqa: E402
from grpo_wb.runs import load as runs  # noqa: E402
from grpo_wb.signal import headroom as hr  # noqa: E402


@pytest.fixture(scope="module")
def run():
    return runs.load_run(shared_run(4))


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


@pytest.mark.sandbox
def test_task_reward_bars_marks_informative_tasks(run):
    tasks = runs.task_table(run.groups)
    fig = plots.task_reward_bars(tasks)
    ax_m, ax_v = fig.axes[:2]
    assert len(ax_m.patches) == len(ax_v.patches) == len(tasks)
    informative_bars = [
        p for p in ax_m.patches if matplotlib.colors.to_hex(p.get_facecolor()) == plots.INFORMATIVE_COLOR
    ]
    assert len(informative_bars) == int(tasks["informative"].sum())
    assert _png(fig).startswith(b"\x89PNG")


@pytest.mark.sandbox
def test_informative_by_step_draws_threshold(run):
    fig = plots.informative_by_step(run.steps, 0.25)
    labels = [ln.get_label() for ln in fig.axes[0].lines]
    assert any("early-stop threshold (0.25)" in lab for lab in labels)
    assert list(fig.axes[0].lines[0].get_ydata()) == list(run.steps["informative_fraction"])
    assert not any("threshold" in ln.get_label() for ln in plots.informative_by_step(run.steps, None).axes[0].lines)


@pytest.mark.sandbox
def test_status_breakdown_stacks_to_group_totals(run):
    st = runs.status_table(run.groups)
    fig = plots.status_breakdown(st)
    widths = sum(p.get_width() for p in fig.axes[0].patches)
    assert widths == st.to_numpy().sum()


@pytest.mark.sandbox
def test_reward_advantage_hist_counts(run):
    r, a = runs.reward_values(run.groups), runs.advantage_values(run.groups)
    fig = plots.reward_advantage_hist(r, a)
    assert sum(p.get_height() for p in fig.axes[0].patches) == len(r)
    assert "exactly zero" in fig.axes[1].get_title()


def test_headroom_plots():
    samples = [
        hr.TaskSamples("a", 8, 4, (1.0,) * 4 + (0.0,) * 4),
        hr.TaskSamples("b", 8, 8, (1.0,) * 8),
        hr.TaskSamples("c", 4, 0, (0.0,) * 4),
    ]
    rep = hr.analyze(samples, budget=16)
    fig = plots.pass_rate_intervals(rep.tasks_frame())
    assert {t.get_text() for t in fig.axes[1].get_legend().get_texts()} == {"frontier: 1", "too easy: 1", "too hard: 1"}
    assert list(fig.axes[0].lines[0].get_ydata()) == [0.0, 0.5, 1.0]  # sorted by pass rate
    assert sum(p.get_height() for p in fig.axes[1].patches) == 3
    _png(fig)
    fig = plots.informative_curve(rep.curve_frame(), rep.recommended_g)
    labels = [ln.get_label() for ln in fig.axes[0].lines]
    assert any(lab.startswith("recommended G=") for lab in labels)
    assert len(fig.axes[0].lines[0].get_xdata()) == 31
    _png(fig)


def test_pass_rate_plot_stays_one_band_at_a_thousand_tasks():
    """Not one error bar per task: the figure has the same size and artists at 1,000 tasks as at 10."""
    import random

    rng = random.Random(0)
    for n_tasks in (10, 1000):
        samples = [hr.TaskSamples(f"t{i}", 16, c, ()) for i, c in enumerate(rng.randint(0, 16) for _ in range(n_tasks))]
        fig = plots.pass_rate_intervals(hr.analyze(samples, budget=64).tasks_frame())
        assert tuple(fig.get_size_inches()) == (11.0, 4.0)
        assert len(fig.axes[0].lines) == 1 and len(fig.axes[0].collections) == 1
        assert sum(p.get_height() for p in fig.axes[1].patches) == n_tasks


@pytest.mark.sandbox
def test_comparison_plots():
    ra, rb = runs.load_run(shared_run(2)), runs.load_run(shared_run(4))
    table = runs.compare_table([ra, rb])
    fig = plots.compare_bars(table)
    assert len(fig.axes[0].patches) == 2 * 4
    fig = plots.compare_steps(runs.steps_long([ra, rb]))
    assert len(fig.axes[0].lines) == 2
    shifts = runs.task_shifts([ra, rb])
    fig = plots.task_shift_bars(shifts, n=3)
    assert len(fig.axes[0].patches) == min(3, len(shifts))


def test_empty_inputs_do_not_crash():
    empty = runs.task_table(pd.DataFrame())
    assert isinstance(plots.task_reward_bars(empty), Figure)
    assert isinstance(plots.status_breakdown(runs.status_table(pd.DataFrame())), Figure)
