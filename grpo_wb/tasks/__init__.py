"""Tasks: the canonical task record and its JSONL format (:mod:`.records`), and the importers of public
task sets and RL datasets (:mod:`.importers`). Imports only the base modules."""
from grpo_wb.tasks.records import (
    Task,
    TestCase,
    check_task_file,
    load_tasks,
    parse_task,
    task_from_json,
    write_tasks,
)

__all__ = ["Task", "TestCase", "check_task_file", "load_tasks", "parse_task", "task_from_json", "write_tasks"]
