"""The precompiled ``bits/stdc++.h`` and the compile cache on disk (``grpo_wb/scoring/compile_cache.py``): neither
ever changes a program or a verdict, neither is writable by a job, and a cache entry is served to its own key only,
whole. The session's cache directory is a fresh one (tests/conftest.py).
"""

import hashlib
import os
import shutil

import pytest
from test_cpp import WATERMELON, fenced, need_gxx

from grpo_wb.scoring import compile_cache
from grpo_wb.scoring import scorer as scorer_mod
from grpo_wb.scoring.compile_cache import CompileStore, Entry, pch_eligible
from grpo_wb.scoring.sandbox import SandboxLimits, cache_root, pch_root
from grpo_wb.scoring.scorer import Scorer, ScoreRequest, compile_cpp
from grpo_wb.tasks.records import task_from_json

LIMITS = SandboxLimits(timeout=3.0, compile_timeout=60.0)
PLAIN = SandboxLimits(timeout=3.0, compile_timeout=60.0, compile_cache=False, precompiled_header=False)
TASK = task_from_json(WATERMELON)

BODY = 'using namespace std;\nint main() { int w; cin >> w; cout << (w % 2 == 0 && w > 2 ? "YES" : "NO"); }\n'
SOURCES = {
    "right": "#include <bits/stdc++.h>\n" + BODY,
    "wrong": "#include <bits/stdc++.h>\n" + BODY.replace("&& w > 2 ", ""),
    "comment first": "// solution\n/* by me */\n#include <bits/stdc++.h>\n" + BODY,
    "quoted": '#include "bits/stdc++.h"\n' + BODY,
    # what a precompiled header must not hide: macros and pragmas before the include change what it means
    "define before": "#define int long long\n#include <bits/stdc++.h>\n#undef int\n" + BODY,
    "debug mode before": "#define _GLIBCXX_DEBUG\n#include <bits/stdc++.h>\n" + BODY,
    "pragma before": '#pragma GCC optimize("Ofast")\n#include <bits/stdc++.h>\n' + BODY,
    "shadowing std": "#include <bits/stdc++.h>\n#define vector list\nnamespace std { int sort = 3; }\n" + BODY,
    "redefines a header macro": "#include <bits/stdc++.h>\n#undef assert\n#define assert(x) (void)0\n" + BODY,
    "the header by its path": "#include </usr/include/x86_64-linux-gnu/c++/12/bits/stdc++.h>\n" + BODY,
    "the gch itself": '#include "bits/stdc++.h.gch"\n' + BODY,
    "compile error": "#include <bits/stdc++.h>\nint main() { undefined_name(); }\n",
}


def test_only_a_source_that_starts_by_including_the_header_is_offered_it():
    assert pch_eligible(SOURCES["right"]) and pch_eligible(SOURCES["comment first"]) and pch_eligible(SOURCES["quoted"])
    assert pch_eligible("\n\n  #  include <bits/stdc++.h>  // all\nint main(){}")
    for name in ("define before", "debug mode before", "pragma before", "the header by its path", "the gch itself"):
        assert not pch_eligible(SOURCES[name]), name
    assert not pch_eligible("#include <iostream>\n#include <bits/stdc++.h>\n")
    assert not pch_eligible("#include <bits/stdc++.hpp>\n") and not pch_eligible("")


def _entry(n):
    return Entry(bytes([n % 256]) * 1000, "pass", "", 0.1)


def _key(n):
    return hashlib.sha256(str(n).encode()).hexdigest()


def test_the_store_keeps_its_bound_least_recently_used_out_first(tmp_path):
    store = CompileStore(str(tmp_path / "cxx"), max_bytes=12_000)
    for n in range(5):
        store.put(_key(n), _entry(n))
    assert store.get(_key(0)) == _entry(0)  # touched: the most recently used
    os.utime(store._path(_key(0)), None)
    for n in range(5, 30):
        store.put(_key(n), _entry(n))
        assert store.size() <= 12_000
    assert store.get(_key(29)) == _entry(29) and store.get(_key(1)) is None


def test_a_damaged_or_misplaced_entry_is_never_served(tmp_path):
    store = CompileStore(str(tmp_path / "cxx"))
    a, b = _key("a"), _key("b")
    store.put(a, _entry(1))
    path_a, path_b = store._path(a), store._path(b)
    os.makedirs(os.path.dirname(path_b), exist_ok=True)
    shutil.copy(path_a, path_b)  # another key's entry under this key's name
    assert store.get(b) is None and not os.path.exists(path_b)
    data = open(path_a, "rb").read()
    open(path_a, "wb").write(data[:-10])  # truncated
    assert store.get(a) is None and not os.path.exists(path_a)
    store.put(a, _entry(1))
    open(path_a, "wb").write(data[:-1] + b"\x99")  # one byte of the program changed
    assert store.get(a) is None
    store.put(a, _entry(1))
    assert store.get(a) == _entry(1) and store.ignored == 3


@pytest.fixture(scope="module")
def both():
    need_gxx()
    with Scorer(LIMITS, workers=2, cache=False) as cached, Scorer(PLAIN, workers=2, cache=False) as plain:
        yield cached, plain


def _compiled(sc, src):
    return sc._compiled(TASK, src, sc.limits)


@pytest.mark.sandbox
def test_the_header_is_built_in_the_sandbox_kept_read_only_and_used(both):
    cached, plain = both
    assert _compiled(cached, SOURCES["right"]).binary
    assert cached.pch is not None and cached.pch_note.startswith("in use"), cached.pch_note
    assert plain.pch is None and plain.store is None
    _compiled(plain, SOURCES["right"])
    assert plain.pch is None and plain.store is None and plain.pch_note.startswith("off")
    gch = os.path.join(cached.pch.include_dir, "bits", "stdc++.h.gch")
    assert gch.startswith(pch_root() + os.sep) and pch_root().startswith(cache_root())
    assert open(gch, "rb").read(4) == b"gpch" and not os.stat(gch).st_mode & 0o022
    probe = compile_cpp(
        cached.sandbox, SOURCES["right"], LIMITS, cached._toolchain_ok or "", pch=cached.pch.include_dir, pch_probe=True
    )
    assert probe.warnings.splitlines()[0] == f"! {gch}", probe.warnings[:300]


@pytest.mark.sandbox
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_same_program_and_verdict_with_and_without_them(both, name):
    cached, plain = both
    src = SOURCES[name]
    a, b = _compiled(cached, src), _compiled(plain, src)
    assert (a.status, a.binary) == (b.status, b.binary), (name, a.status, b.status, a.error[:300], b.error[:300])
    ra = next(iter(cached.score([ScoreRequest(TASK, fenced(src))])))
    rb = next(iter(plain.score([ScoreRequest(TASK, fenced(src))])))
    assert (ra.status, ra.reward, ra.tests_passed) == (rb.status, rb.reward, rb.tests_passed), name


WRITE_THE_CACHE = r"""#include <bits/stdc++.h>
int main() {
    const char* paths[] = {"GCH", "PCHDIR/planted", "CXXDIR/planted", "ROOT/planted"};
    for (const char* p : paths) {
        FILE* f = fopen(p, "a");
        if (f) { fputs("x", f); fclose(f); std::cout << "WROTE " << p << "\n"; }
    }
    std::string w; std::cin >> w; std::cout << "NO\n";
}
"""


@pytest.mark.sandbox
def test_a_job_cannot_write_the_header_or_the_cache(both):
    cached, _ = both
    assert _compiled(cached, SOURCES["right"]).binary and cached.pch is not None and cached.store is not None
    gch = os.path.join(cached.pch.include_dir, "bits", "stdc++.h.gch")
    before = open(gch, "rb").read()
    src = (
        WRITE_THE_CACHE.replace("GCH", gch)
        .replace("PCHDIR", cached.pch.include_dir)
        .replace("CXXDIR", cached.store.root)
        .replace("ROOT", cache_root())
    )
    task = task_from_json({**WATERMELON, "task_id": "cf/planter", "tests": [WATERMELON["tests"][1]]})
    r = next(iter(cached.score([ScoreRequest(task, fenced(src))])))
    assert r.status == "pass", (r.status, r.error)  # it printed no WROTE line: every open failed
    assert open(gch, "rb").read() == before
    assert not any(os.path.exists(os.path.join(d, "planted")) for d in (cached.pch.include_dir, cached.store.root))


@pytest.mark.sandbox
def test_a_second_scorer_compiles_nothing_the_first_compiled(both):
    cached, _ = both
    src = SOURCES["right"].replace("int w;", "int w; /* twice */")
    assert _compiled(cached, src).binary
    # kept by this scorer whether or not an earlier test's compile of it ran out of time under load (not kept)
    assert _compiled(cached, SOURCES["compile error"]).status == "error"
    with Scorer(LIMITS, workers=1, cache=False) as again:
        r = next(iter(again.score([ScoreRequest(TASK, fenced(src))])))
        assert r.status == "pass" and (again.compiles, again.disk_hits) == (0, 1)
        r = next(iter(again.score([ScoreRequest(TASK, fenced(SOURCES["compile error"]))])))
        assert r.status == "error" and again.compiles == 0  # a compile error is kept too


@pytest.mark.sandbox
def test_an_entry_of_another_compiler_or_other_flags_is_never_served(monkeypatch):
    need_gxx()
    nopch = SandboxLimits(timeout=3.0, compile_timeout=60.0, precompiled_header=False)  # the key differs by that alone
    src = SOURCES["right"].replace("int w;", "int w; /* other compiler */")
    with Scorer(nopch, workers=1, cache=False) as first:
        built = _compiled(first, src)
        assert built.binary and first.compiles == 1
    real = compile_cache.compiler_identity
    with monkeypatch.context() as m:
        m.setattr(scorer_mod, "compiler_identity", lambda c: real(c) + "\nanother build")
        with Scorer(nopch, workers=1, cache=False) as other:
            assert _compiled(other, src).binary == built.binary and (other.compiles, other.disk_hits) == (1, 0)
    with monkeypatch.context() as m:
        m.setattr(scorer_mod.protocol, "CXX_FLAGS", (*scorer_mod.protocol.CXX_FLAGS, "-DOTHER"))
        with Scorer(nopch, workers=1, cache=False) as other:
            assert _compiled(other, src).binary and (other.compiles, other.disk_hits) == (1, 0)
    with Scorer(nopch, workers=1, cache=False) as same:  # and the entry of its own key still is
        assert _compiled(same, src).binary == built.binary and (same.compiles, same.disk_hits) == (0, 1)


@pytest.mark.sandbox
def test_a_corrupted_entry_is_compiled_again(both):
    cached, _ = both
    src = SOURCES["right"].replace("int w;", "int w; /* corrupted */")
    first = _compiled(cached, src)
    store = cached.store
    assert store is not None
    newest = max((e for e in store._entries()), key=lambda e: e[2])[0]
    data = open(newest, "rb").read()
    open(newest, "wb").write(data[: len(data) // 2])
    with Scorer(LIMITS, workers=1, cache=False) as again:
        assert _compiled(again, src).binary == first.binary and (again.compiles, again.disk_hits) == (1, 0)


@pytest.mark.sandbox
def test_the_switch_turns_the_disk_cache_off():
    need_gxx()
    off = SandboxLimits(timeout=3.0, compile_timeout=60.0, compile_cache=False)
    with Scorer(off, workers=1, cache=False) as sc:
        assert _compiled(sc, SOURCES["right"]).binary and sc.store is None and sc.pch is not None
