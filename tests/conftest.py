import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "data" / "toy_tasks.jsonl"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture
def toy_tasks_path() -> Path:
    return TOY


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read_jsonl(path: Path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
