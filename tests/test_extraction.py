"""extract_program: the shapes completions come in, and what the scorer makes of them."""

from __future__ import annotations

import pytest
from conftest import TOY

from grpo_wb.scoring.extraction import extract_program
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.records import load_tasks

PROMPT = 'from typing import List\n\n\ndef add(a: int, b: int) -> int:\n    """Return a + b."""\n'
EP = "add"
BODY = "    return a + b\n"
FULL = "def add(a: int, b: int) -> int:\n    return a + b\n"


def run_add(program: str):
    """Execute an extracted program (our own test strings) and return its add function."""
    ns: dict = {}
    exec(compile(program, "<extracted>", "exec"), ns)
    return ns[EP]


def assert_parse_failure(completion: str, reason: str):
    ext = extract_program(PROMPT, EP, completion)
    assert not ext.ok
    assert ext.program is None
    assert ext.mode == "none"
    assert reason in ext.reason


# ----------------------------------------------------------------------------- code shapes


def test_raw_continuation_is_prompt_plus_completion():
    ext = extract_program(PROMPT, EP, BODY)
    assert ext.ok and ext.mode == "continuation"
    assert ext.program == PROMPT + BODY
    assert run_add(ext.program)(2, 3) == 5


def test_raw_continuation_with_trailing_text_is_kept_verbatim():
    completion = "    total = a + b\n    return total\n\n\nif __name__ == '__main__':\n    print(add(1, 2))\n"
    ext = extract_program(PROMPT, EP, completion)
    assert ext.mode == "continuation" and ext.program == PROMPT + completion
    assert run_add(ext.program)(4, 4) == 8


def test_raw_full_function():
    ext = extract_program(PROMPT, EP, FULL)
    assert ext.ok and ext.mode == "full_function"
    assert ext.program.endswith(FULL)
    assert "from typing import List" in ext.program  # the prompt's imports are kept
    assert run_add(ext.program)(2, 3) == 5


def test_full_function_in_python_fence_with_prose():
    completion = f"Here is the solution:\n\n```python\n{FULL}```\n\nIt adds the two numbers."
    ext = extract_program(PROMPT, EP, completion)
    assert ext.ok and ext.mode == "full_function"
    assert "Here is the solution" not in ext.program and "It adds" not in ext.program
    assert "```" not in ext.program
    assert ext.program.endswith(FULL)
    assert run_add(ext.program)(-2, 3) == 1


@pytest.mark.parametrize("tag", ["py", "Python", "python3"])
def test_other_python_fence_tags(tag):
    ext = extract_program(PROMPT, EP, f"```{tag}\n{FULL}```")
    assert ext.mode == "full_function"
    assert run_add(ext.program)(1, 1) == 2


def test_untagged_fence():
    ext = extract_program(PROMPT, EP, f"```\n{FULL}```\n")
    assert ext.ok and ext.mode == "full_function"
    assert "```" not in ext.program
    assert run_add(ext.program)(10, 5) == 15


def test_fenced_continuation_body():
    ext = extract_program(PROMPT, EP, f"```python\n{BODY}```")
    assert ext.mode == "continuation"
    assert ext.program == PROMPT + BODY


def test_unclosed_fence_from_a_truncated_completion():
    ext = extract_program(PROMPT, EP, f"Sure.\n```python\n{FULL}\n# and now some more comm")
    assert ext.ok and ext.mode == "full_function"
    assert "```" not in ext.program and "Sure." not in ext.program
    assert run_add(ext.program)(2, 2) == 4


def test_multiple_blocks_the_one_defining_the_entry_point_wins():
    completion = (
        "First, an example of use:\n```python\nprint(add(1, 2))\n```\n"
        f"The function:\n```python\n{FULL}```\nAnd a test:\n```python\nassert add(1, 1) == 2\n```\n"
    )
    ext = extract_program(PROMPT, EP, completion)
    assert ext.mode == "full_function"
    assert "print(add(1, 2))" not in ext.program and "assert add(1, 1)" not in ext.program
    assert run_add(ext.program)(3, 4) == 7


def test_multiple_defining_blocks_the_last_wins():
    completion = (
        "```python\ndef add(a, b):\n    return a - b\n```\nOops, fixed:\n"
        "```python\ndef add(a, b):\n    return a + b\n```\n"
    )
    ext = extract_program(PROMPT, EP, completion)
    assert ext.mode == "full_function"
    assert "a - b" not in ext.program
    assert run_add(ext.program)(3, 4) == 7


def test_syntax_error_continuation_is_code_not_a_parse_failure():
    completion = "    return a +\n"
    ext = extract_program(PROMPT, EP, completion)
    assert ext.ok, "a syntax error is the sandbox's to report (error), not a parse failure"
    assert ext.mode == "continuation"
    assert ext.program == PROMPT + completion
    with pytest.raises(SyntaxError):
        compile(ext.program, "<x>", "exec")


def test_syntax_error_inside_a_fence_is_code_too():
    ext = extract_program(PROMPT, EP, "```python\ndef add(a, b)\n    return a + b\n```")
    assert ext.ok and ext.mode == "full_function"


# ----------------------------------------------------------------------------- parse failures


def test_bash_only_reply_is_a_parse_failure():
    assert_parse_failure("Install it first:\n```bash\npip install adder\n```\n", "no Python code block")


def test_empty_python_fence_is_a_parse_failure():
    assert_parse_failure("```python\n```", "no Python code block")


@pytest.mark.parametrize(
    "text",
    [
        "I'm sorry, I can't help with that.",
        "Sorry",
        "As an AI language model, I cannot write code.",
        "The function returns the sum of a and b.",
        "You can use the + operator (it is simple).",
    ],
)
def test_prose_without_code_is_a_parse_failure(text):
    assert_parse_failure(text, "no code in the reply")


@pytest.mark.parametrize("text", ["", " ", "\n\n", "  \t\n  "])
def test_empty_or_whitespace_is_a_parse_failure(text):
    assert_parse_failure(text, "empty completion")


# ----------------------------------------------------------------------------- executed by the scorer


@pytest.fixture(scope="module")
def add_task():
    return next(t for t in load_tasks(TOY) if t.task_id == "toy/add")


@pytest.mark.sandbox
def test_statuses_from_the_scorer(add_task):
    prompt_def = add_task.prompt.splitlines()[0]  # "def add(a: int, b: int) -> int:"
    cases = [
        ("    return a + b\n", "pass", "continuation"),
        (f"```python\n{prompt_def}\n    return b + a\n```", "pass", "full_function"),
        (f"```\n{prompt_def}\n    return a + b\n", "pass", "full_function"),  # unclosed fence
        ("    return a - b\n", "fail", "continuation"),
        ("    return a +\n", "error", "continuation"),  # syntax error
        ("    raise SystemExit(0)\nraise SystemExit(0)\n", "error", "continuation"),  # leaves early
        ("I'm sorry, I can't help with that.", "parse_failure", "none"),
        ("```bash\necho 3\n```", "parse_failure", "none"),
        ("   \n", "parse_failure", "none"),
    ]
    with Scorer(SandboxLimits(timeout=5), workers=2) as scorer:
        results = list(
            scorer.score(ScoreRequest(task=add_task, completion=c, sample_index=i) for i, (c, _, _) in enumerate(cases))
        )
    got = [(r.status, r.extraction_mode) for r in results]
    assert got == [(s, m) for _, s, m in cases]
    n = len(add_task.tests)
    for r, (_, status, _) in zip(results, cases):
        assert r.passed == (status == "pass")
        assert r.tests_total == n
        if status == "pass":
            assert r.tests_passed == n and r.error == ""
        elif status == "parse_failure":
            assert r.tests_passed == 0 and r.duration_s == 0 and r.failed_tests == [t.name for t in add_task.tests]
        elif status == "error":
            assert r.tests_passed == 0 and r.error
    assert "SyntaxError" in results[4].error
    assert "SystemExit" in results[5].error
    # which rule chose the code travels with each result (the verdict itself is cached by program)
    assert results[1].extraction == {
        "mode": "full_function",
        "rule": "last complete defining block",
        "block": 0,
        "n_blocks": 1,
    }
    assert results[2].extraction["rule"] == "last defining block"  # unclosed, the only block
    assert results[0].extraction == {"mode": "continuation", "rule": "raw", "block": None, "n_blocks": 0}


# ----------------------------------------------------------------------------- bugs


def test_crlf_fenced_reply():
    completion = "Here:\r\n```python\r\ndef add(a, b):\r\n    return a + b\r\n```\r\nThat's it.\r\n"
    ext = extract_program(PROMPT, EP, completion)
    assert ext.mode == "full_function"
    assert "```" not in ext.program and "That's it" not in ext.program
    assert run_add(ext.program)(2, 3) == 5


def test_indented_fence_in_a_list_item():
    completion = "1. The code:\n\n   ```python\n   def add(a, b):\n       return a + b\n   ```\n"
    ext = extract_program(PROMPT, EP, completion)
    assert ext.mode == "full_function"
    assert run_add(ext.program)(2, 3) == 5


# ----------------------------------------------------------------------------- real chat replies (issue 18)


@pytest.mark.parametrize(
    "text",
    [
        "Sorry, I cannot help with that.",
        "# Solution\nThe answer is\u2026",
        "if you add them you get the sum.",
        "print the result",
        "    I think the answer is to add them.",
        "The function returns a + b when both are given.",
    ],
)
def test_prose_the_tokenizer_reads_as_sentences_is_a_parse_failure(text):
    assert_parse_failure(text, "no code")


@pytest.mark.parametrize(
    "text",
    [
        "    return a +\n",  # cut off
        "    result = [x for x in range(3)\n    return result +\n",
        "def add(a, b)\n    return a + b\n",  # a missing colon
        "    if a > b\n        return a\n    return b\n",
        "    print 'py2'\n    return a + b\n",  # Python 2
        "    retrun a + b\n",  # a typo: two words, but the line is code-shaped
    ],
)
def test_broken_code_stays_code(text):
    ext = extract_program(PROMPT, EP, text)
    assert ext.ok, ext.reason


def test_a_cut_off_repeat_of_the_code_block_does_not_win():
    """Chat models repeat their block; at the token limit the last copy is cut off mid-line."""
    block = f"```python\n{FULL}```\n"
    completion = (
        "Here it is:\n" + block + "Again, for clarity:\n" + block + "Once more:\n```python\ndef add(a, b):\n    ret"
    )
    ext = extract_program(PROMPT, EP, completion)
    assert (ext.rule, ext.block, ext.n_blocks) == ("last complete defining block", 1, 3)
    assert run_add(ext.program)(2, 3) == 5


def test_a_complete_block_that_does_not_compile_loses_to_one_that_does():
    completion = f"```python\n{FULL}```\nOr shorter:\n```python\ndef add(a, b) return a + b\n```\n"
    ext = extract_program(PROMPT, EP, completion)
    assert (ext.rule, ext.block) == ("last complete defining block", 0)
    assert run_add(ext.program)(1, 2) == 3


def test_an_unclosed_block_still_wins_when_it_is_the_only_one_and_says_so():
    ext = extract_program(PROMPT, EP, f"```python\n{FULL}\nprint(add(1, 2)")
    assert ext.rule == "entry point cut from an incomplete block" and ext.to_json()["n_blocks"] == 1


def test_an_unclosed_block_followed_by_another_fence_ends_there():
    completion = (
        "Example:\n```python\ndef sub(a, b):\n    return a - b\n\nNow the answer:\n```python\n" + FULL + "```\n"
    )
    ext = extract_program(PROMPT, EP, completion)
    assert (ext.rule, ext.n_blocks, ext.block) == ("last complete defining block", 2, 1)
    assert "def sub" not in ext.program


@pytest.mark.parametrize(
    "wrap",
    [
        "<think>\nLet me think: add them. def add(a, b): nope\n</think>\n{code}",
        "{code}<|im_end|>\n<|im_start|>user\nthanks<|im_end|>",
        "{code}<|eot_id|>",
        "<step>{code}</step></s>",
        "{code}\n</s>",
    ],
)
def test_reasoning_traces_and_chat_template_tokens_are_stripped(wrap):
    ext = extract_program(PROMPT, EP, wrap.format(code=f"```python\n{FULL}```"))
    assert ext.ok and ext.mode == "full_function" and "<" not in ext.program.replace("->", "")
    assert run_add(ext.program)(2, 2) == 4


def test_a_reply_that_never_leaves_its_reasoning_is_a_parse_failure():
    assert_parse_failure("<think>\nI would write def add(a, b): return a + b but", "no answer")


@pytest.mark.data
def test_real_broken_code_from_codegen_stays_code():
    """Every CodeGen-16B sample with a line that parses as a statement of its own is extracted as code, so
    the sandbox reports it (error when it does not compile), never a parse failure."""
    import ast

    from conftest import read_jsonl

    from grpo_wb.bundled import CODEGEN_SAMPLES
    from grpo_wb.tasks.importers import import_humaneval

    def has_statement(text):
        for line in text.splitlines():
            try:
                body = ast.parse(line.strip()).body
            except SyntaxError:
                continue
            if body and not (isinstance(body[0], ast.Expr) and isinstance(body[0].value, (ast.Name, ast.Constant))):
                return True
        return False

    tasks = {t.task_id: t for t in import_humaneval()[0]}
    lost, broken = [], 0
    for s in read_jsonl(CODEGEN_SAMPLES):
        t = tasks[s["task_id"]]
        ext = extract_program(t.prompt, t.entry_point, s["completion"])
        if has_statement(s["completion"]) and not ext.ok:
            lost.append((s["task_id"], s["completion"][:80]))
        broken += ext.ok and not compiles(ext.program)
    assert lost == []
    assert broken > 500  # the set has real broken code: it is all still code


def compiles(src):
    try:
        compile(src, "<x>", "exec")
        return True
    except (SyntaxError, ValueError):
        return False


# ----------------------------------------------------------------------------- real replies a harness missed (issue 12)


def test_a_reply_that_starts_with_a_space_is_read_as_a_full_function():
    """After ``[/INST]`` or ``ASSISTANT:`` a reply often starts with a space: glued to the prompt, a SyntaxError."""
    ext = extract_program(PROMPT, EP, " " + FULL)
    assert ext.mode == "full_function" and compiles(ext.program)
    assert run_add(ext.program)(2, 3) == 5


def test_a_leading_space_before_an_import_is_dropped_from_every_line_that_shares_it():
    ext = extract_program(PROMPT, EP, " import math\n def add(a, b):\n     return math.floor(a + b)\n")
    assert ext.mode == "full_function" and "\nimport math\ndef add(a, b):" in ext.program
    assert run_add(ext.program)(2, 3) == 5


def test_a_bare_language_line_under_an_untagged_fence_is_the_tag():
    ext = extract_program(PROMPT, EP, f"Here you go:\n```\npython\n{FULL}```\n")
    assert ext.mode == "full_function" and "python\n" not in ext.program
    assert run_add(ext.program)(2, 3) == 5


@pytest.mark.parametrize("tag", ["python_code", "python-3", "py3.10", "Python_Solution"])
def test_python_fence_tags_with_a_suffix(tag):
    ext = extract_program(PROMPT, EP, f"```{tag}\n{FULL}```")
    assert ext.mode == "full_function" and ext.n_blocks == 1
    assert run_add(ext.program)(2, 3) == 5


def test_codellama_python_tags():
    completion = f"[PYTHON]\n{FULL}[/PYTHON]\n[TESTS]\n# Test case 1:\nassert add(1, 2) == 4\n[/TESTS]\n"
    ext = extract_program(PROMPT, EP, completion)
    assert ext.mode == "full_function" and "[" not in ext.program and "assert add" not in ext.program
    assert run_add(ext.program)(2, 3) == 5


def test_a_fence_opened_in_the_middle_of_a_line():
    ext = extract_program(PROMPT, EP, f"Here is the code: ```python\n{FULL}```\nIt adds.")
    assert ext.mode == "full_function" and "Here is" not in ext.program and "```" not in ext.program
    assert run_add(ext.program)(2, 3) == 5


@pytest.mark.parametrize(
    "text", [" Sorry, I cannot help with that.", " The function returns a + b when both are given."]
)
def test_control_prose_that_starts_with_a_space_is_still_not_code(text):
    assert_parse_failure(text, "no code")


@pytest.mark.parametrize(
    "text",
    [
        "[PYTHON]\nI cannot write that function.\n[/PYTHON]\n",
        "The answer is: ```python\nI cannot write that function.\n```\n",
    ],
)
def test_control_prose_in_the_new_block_shapes_is_still_not_code(text):
    assert_parse_failure(text, "holds prose")


@pytest.mark.parametrize("tag", ["python-repl", "pycon", "pythonic"])
def test_control_other_tags_that_start_with_py_are_not_python_code(tag):
    assert_parse_failure(f"```{tag}\n>>> add(1, 2)\n3\n```\n", "no Python code block")


@pytest.mark.parametrize(
    "body",
    [
        BODY,
        "    def helper(x):\n        return x\n    return helper(a) + b\n",
        "    def helper(x):\n        return x +\n",
    ],
)  # cut off: it still continues
def test_control_an_indented_body_is_still_glued_to_the_prompt(body):
    ext = extract_program(PROMPT, EP, body)
    assert (ext.mode, ext.rule) == ("continuation", "raw") and ext.program == PROMPT + body
