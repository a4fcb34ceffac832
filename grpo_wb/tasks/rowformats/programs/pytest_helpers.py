"""The helpers the tests of a KodCode-style pytest module call, run in the sandbox: appended to the ``test_setup`` of
a task whose module has test classes, marks, fixtures or xunit setup (``grpo_wb.tasks.rowformats.kodcode_pytest``
writes the calls). The standard library only, nothing of grpo_wb.

What is sent is what follows the marker line, byte for byte (``grpo_wb.tasks.sandbox_programs``): it is part of
every such task, so ruff lints this file but does not format it (a reformat would change the tasks an import
makes). Above the marker, for the checkers only: what the test module's setup defines when it runs.
"""

#: fixture name -> (the fixture function, the fixtures it asks for): written into the setup by ``_pytest_tests``
__grpo_wb_fixture_spec: dict[str, tuple[object, list[str]]] = {}

# ---- sent to the sandbox from the next line on ----

def __grpo_wb_call(f, *args):
    if f is None:
        return
    code = getattr(getattr(f, "__func__", f), "__code__", None)
    n = code.co_argcount - hasattr(f, "__self__") if code is not None else len(args)
    f(*args[:max(n, 0)])

def __grpo_wb_method(cls, name, kwargs, fixtures=()):
    __grpo_wb_call(getattr(cls, "setup_class", None))
    try:
        inst = cls()
        __grpo_wb_call(getattr(inst, "setup_method", None), getattr(inst, name))
        try:
            if fixtures:
                __grpo_wb_fixtures(lambda fx: getattr(inst, name)(**kwargs, **fx), fixtures)
            else:
                getattr(inst, name)(**kwargs)
        finally:
            __grpo_wb_call(getattr(inst, "teardown_method", None), getattr(inst, name))
    finally:
        __grpo_wb_call(getattr(cls, "teardown_class", None))

def __grpo_wb_unittest(cls, name):
    import unittest.case
    for k, v in vars(unittest.case.TestCase).items():  # an answer that rebinds assertEqual & co. to no-ops
        f = getattr(getattr(v, "__func__", v), "__wrapped__", getattr(v, "__func__", v))
        code = getattr(f, "__code__", None)
        if code is not None and code.co_filename != unittest.case.__file__:
            raise AssertionError(f"unittest.TestCase.{k} was replaced")
    method = getattr(cls, name)
    if getattr(cls, "__unittest_skip__", False) or getattr(method, "__unittest_skip__", False):
        return
    expect = getattr(cls, "__unittest_expecting_failure__", False) or getattr(
        method, "__unittest_expecting_failure__", False
    )
    cls.setUpClass()
    try:
        if not expect:
            cls(name).debug()
            return
        try:
            cls(name).debug()
        except Exception:
            return
        raise AssertionError("unexpected success (expectedFailure)")
    finally:
        cls.tearDownClass()

def __grpo_wb_cond(c):
    if isinstance(c, str):
        import os, sys, platform
        return eval(c, {"os": os, "sys": sys, "platform": platform, **globals()})
    return c

def __grpo_wb_run(run, skipif=(), xfail=()):
    if any(__grpo_wb_cond(c) for c in skipif):
        return
    for cond, raises, strict, do_run in xfail:
        if not cond or any(__grpo_wb_cond(c) for c in cond):
            if not do_run:
                return
            try:
                run()
            except raises:
                return
            if strict:
                raise AssertionError("[XPASS(strict)]")
            return
    run()

class __grpo_wb_Module:
    """The test module, as setup_module(module) sees it: its globals."""
    def __getattr__(self, name):
        try:
            return globals()[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        globals()[name] = value

    def __delattr__(self, name):
        globals().pop(name, None)

def __grpo_wb_fixtures(call, wanted):
    """Call call(values) with the module's fixtures named in wanted (and those they ask for), set up afresh;
    a yield fixture's code after its yield runs after the call."""
    import inspect
    values, gens = {}, []

    def get(name):
        if name not in values:
            f, deps = __grpo_wb_fixture_spec[name]
            f = getattr(f, "_get_wrapped_function", None) and f._get_wrapped_function()                 or getattr(getattr(f, "__pytest_wrapped__", None), "obj", None) or f
            v = f(**{d: get(d) for d in deps})
            if inspect.isgeneratorfunction(f):
                gens.append(v)
                v = next(v)
            values[name] = v
        return values[name]

    try:
        call({n: get(n) for n in wanted})
    finally:
        for g in reversed(gens):
            try:
                next(g)
            except StopIteration:
                pass
            else:
                raise ValueError("fixture function has more than one 'yield'")

def __grpo_wb_xunit(run, msetup=None, mteardown=None, fsetup=None, fteardown=None, func=None):
    __grpo_wb_call(msetup, __grpo_wb_Module())
    try:
        __grpo_wb_call(fsetup, func)
        try:
            run()
        finally:
            __grpo_wb_call(fteardown, func)
    finally:
        __grpo_wb_call(mteardown, __grpo_wb_Module())
