"""Run in the sandbox after a KodCode-style test module that imports pytest (``grpo_wb.tasks.rowformats.
kodcode_pytest`` appends it to the task's ``test_setup``): an answer that rebinds ``pytest.raises`` & co. fails.
The standard library only, nothing of grpo_wb.

What is sent is what follows the marker line, byte for byte (``grpo_wb.tasks.sandbox_programs``): it is part of
every such task, so ruff lints this file but does not format it (a reformat would change the tasks an import
makes).
"""

# ---- sent to the sandbox from the next line on ----

def __grpo_wb_pytest_intact():
    import os, sys
    mod, home = sys.modules.get("pytest"), sys.modules.get("_pytest")
    if mod is None or home is None:
        return
    root = os.path.dirname(os.path.dirname(home.__file__))
    homes = (os.path.join(root, "_pytest", ""), os.path.join(root, "pytest", ""))
    for k, v in vars(mod).items():
        f = getattr(getattr(v, "__func__", v), "__wrapped__", getattr(v, "__func__", v))
        code = getattr(f, "__code__", None)
        if code is not None and not code.co_filename.startswith(homes) or isinstance(v, type) \
                and not v.__module__.startswith(("_pytest", "pytest")):
            raise AssertionError(f"pytest.{k} was replaced")

__grpo_wb_pytest_intact()
