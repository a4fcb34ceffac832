"""How values cross between processes: builtin types only (exact types), so that a value with a forged ``__eq__``
never reaches a comparison. A job's child encodes what the candidate returned and the scorer decodes and compares
(``scoring.verdicts``); an exec test's calls into the candidate's process cross the same way (:mod:`wb_remote`).
Decoding is linear in what is received, whatever the sender chose (:func:`check_hashes`)."""

import collections
import re
import reprlib

_DICT_LIKE = (collections.Counter, collections.OrderedDict, collections.defaultdict)


class NotBuiltin(Exception):
    pass


def encode(value, depth=0, budget=None, hook=None):
    """Encode a value built only from builtin types (exact types: subclasses are rejected); with ``hook``, anything
    else is ``hook(value)`` (a handle: :mod:`wb_remote`) instead of :class:`NotBuiltin`."""
    if budget is None:
        budget = [200000]
    budget[0] -= 1
    if budget[0] < 0 or depth > 64:
        raise NotBuiltin("value too large or too deeply nested")
    t = type(value)
    if t is bool or t is type(None) or t is str:
        return value
    if t is int:
        if abs(value) > 1 << 63:  # hex: no digit limit (str() refuses past 4,300 digits), and fast
            return {"$": "bigint", "v": hex(value)}
        return value
    if t is float:
        if value != value or value in (float("inf"), float("-inf")):
            return {"$": "float", "v": repr(value)}
        return value
    if t is list:
        return [encode(v, depth + 1, budget, hook) for v in value]
    if t is tuple:
        return {"$": "tuple", "v": [encode(v, depth + 1, budget, hook) for v in value]}
    if t is dict:
        return {
            "$": "dict",
            "v": [[encode(k, depth + 1, budget, hook), encode(v, depth + 1, budget, hook)] for k, v in value.items()],
        }
    if t is set or t is frozenset:
        return {"$": t.__name__, "v": [encode(v, depth + 1, budget, hook) for v in value]}
    if t is bytes:
        return {"$": "bytes", "v": value.hex()}
    if t is complex:
        return {"$": "complex", "v": [repr(value.real), repr(value.imag)]}
    # Standard-library value types that references return: converted to their builtin
    # equivalent through the C-level dict/deque methods, so a patched method cannot run.
    if t in _DICT_LIKE:
        return {
            "$": "dict",
            "v": [
                [encode(k, depth + 1, budget, hook), encode(v, depth + 1, budget, hook)] for k, v in dict.items(value)
            ],
        }
    if t is collections.deque:
        return [encode(v, depth + 1, budget, hook) for v in list(value)]
    if t is re.Match:
        return True  # a match object is only ever truthy; comparing it to a value fails
    if hook is not None:
        return hook(value)
    raise NotBuiltin(f"returned a value of non-builtin type {t.__module__}.{t.__qualname__}")


MAX_INT_BITS = 1 << 16
"""Most bits an integer in the scorer may have (about 19,700 decimal digits)."""
MAX_SAME_HASH = 16
"""Most distinct members (or keys) one decoded set, frozenset or dict may hold under one hash value. Ints,
floats and tuples hash deterministically (``n`` and ``n + k * (2**61 - 1)`` alike), and a hash table holding ``m``
of them takes ``m**2`` comparisons to build: 60,000 took 50 s, with the GIL held."""


class DecodeError(ValueError):
    pass


def check_hashes(items, what="members"):
    """Refuse (:class:`DecodeError`) ``items`` that are unhashable or of which more than :data:`MAX_SAME_HASH`
    distinct ones share a hash, before a set or dict is built of them. Linear: hash values are counted (distinct
    ints, which do not collide among themselves), and only a crowded hash's items are compared, each with at most
    :data:`MAX_SAME_HASH` others."""
    try:
        hashes = [hash(x) for x in items]
    except TypeError:
        raise DecodeError(f"unhashable {what}") from None
    counts = collections.Counter(hashes)
    crowded = {h for h, n in counts.items() if n > MAX_SAME_HASH}
    if not crowded:
        return
    seen = {}
    for x, h in zip(items, hashes):
        if h in crowded:
            group = seen.setdefault(h, [])
            if not any(x is y or x == y for y in group):  # as a set tells members apart
                if len(group) == MAX_SAME_HASH:
                    raise DecodeError(
                        f"more than {MAX_SAME_HASH} distinct {what} share one hash value "
                        f"(a set or dict of them takes quadratic time to build)"
                    )
                group.append(x)


def decode_value(obj, depth=0, hook=None):
    """Rebuild a value :func:`encode` made; anything off-format is a :class:`DecodeError` (the test fails). With
    ``hook``, a tag this module does not know is ``hook(tag, v)`` (a handle: :mod:`wb_remote`)."""
    if depth > 64:
        raise DecodeError("value nested too deeply")
    if obj is None or type(obj) in (bool, str, int, float):
        return obj
    if type(obj) is list:
        return [decode_value(v, depth + 1, hook) for v in obj]
    if type(obj) is dict and set(obj) == {"$", "v"}:
        tag, v = obj["$"], obj["v"]
        if tag == "tuple" and type(v) is list:
            return tuple(decode_value(x, depth + 1, hook) for x in v)
        if tag == "dict" and type(v) is list:
            keys, values = [], []
            for pair in v:
                if type(pair) is not list or len(pair) != 2:
                    raise DecodeError("bad dict item")
                keys.append(decode_value(pair[0], depth + 1, hook))
                values.append(decode_value(pair[1], depth + 1, hook))
            check_hashes(keys, "keys")
            return dict(zip(keys, values))
        if tag in ("set", "frozenset") and type(v) is list:
            items = [decode_value(x, depth + 1, hook) for x in v]
            check_hashes(items)
            return set(items) if tag == "set" else frozenset(items)
        if tag == "bigint" and type(v) is str:
            if len(v) > MAX_INT_BITS // 4 + 3:  # hex digits (the child encodes big ints in hex)
                raise DecodeError("an integer larger than the scorer evaluates")
            return int(v, 16) if v.lstrip("-").startswith("0x") else int(v)
        if tag == "float" and v in ("nan", "inf", "-inf"):
            return float(v)
        if tag == "bytes" and type(v) is str:
            return bytes.fromhex(v)
        if tag == "complex" and type(v) is list and len(v) == 2:
            return complex(float(v[0]), float(v[1]))
        if hook is not None and type(tag) is str:
            return hook(tag, v)
    raise DecodeError(f"not an encoded builtin value: {reprlib.repr(obj)[:80]}")  # bounded, however large obj
