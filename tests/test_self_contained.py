"""A clone of the repository works on its own: code and tests read only paths inside it."""

import re
import subprocess

import pytest
from conftest import ROOT

from grpo_wb import bundled

# built from pieces so that this file does not name what it looks for
OUTSIDE = re.compile("|".join([r"\.\./" + "shared", r'parent / "' + 'shared"', r"parents\[1\]\." + "parent"]))


def test_no_code_or_test_reads_beside_the_checkout():
    offenders = [
        str(p.relative_to(ROOT))
        for folder in ("grpo_wb", "tests", "notebooks")
        for p in sorted((ROOT / folder).rglob("*"))
        if p.is_file()
        and p.suffix in (".py", ".ipynb")
        and OUTSIDE.search(p.read_text(encoding="utf-8", errors="replace"))
    ]
    assert offenders == [], f"these read outside the repository: {offenders}"


def test_the_planted_reference_would_be_caught():
    assert OUTSIDE.search(
        "".join(["DATA = ROOT / '..' / 'x' or Path('../", "shared/data')"])
    )  # join: never folded into the .pyc


@pytest.mark.data
def test_every_bundled_path_exists_with_its_licence_and_provenance():
    paths = [v for k, v in vars(bundled).items() if k.isupper() and hasattr(v, "exists")]
    assert len(paths) >= 8
    assert [p for p in paths if not p.exists()] == []
    provenance = (bundled.EXTERNAL / "PROVENANCE.md").read_text(encoding="utf-8")
    for folder in sorted(p for p in bundled.EXTERNAL.iterdir() if p.is_dir()):
        assert any(f.name.upper().startswith("LICENSE") for f in folder.iterdir()), f"{folder.name}: no licence file"
        assert f"`{folder.name}/`" in provenance, f"{folder.name}: no PROVENANCE section"


@pytest.mark.data
def test_the_repository_stays_small():
    """The bundled data are compressed; the whole tracked tree stays under 8 MiB (the README states its size)."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    size = sum((ROOT / f).stat().st_size for f in files.split("\0") if f and (ROOT / f).is_file())
    assert size < 8 << 20, f"tracked files hold {size / 2**20:.1f} MiB"


def test_every_relative_link_and_picture_in_the_docs_resolves():
    """A link or image in README.md or docs/ that points inside the repository names a file that exists."""
    broken = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            if not re.match(r"[a-z]+:", target) and not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert broken == []
