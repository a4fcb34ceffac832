"""How a job's child encodes what the candidate returned: builtin types only (exact types), so that a value with
a forged ``__eq__`` never reaches a comparison; the scorer decodes and compares (``scoring.verdicts``)."""
import collections
import re


_DICT_LIKE = (collections.Counter, collections.OrderedDict, collections.defaultdict)


class NotBuiltin(Exception):
    pass


def encode(value, depth=0, budget=None):
    """Encode a value built only from builtin types (exact types: subclasses are rejected)."""
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
        return [encode(v, depth + 1, budget) for v in value]
    if t is tuple:
        return {"$": "tuple", "v": [encode(v, depth + 1, budget) for v in value]}
    if t is dict:
        return {"$": "dict", "v": [[encode(k, depth + 1, budget), encode(v, depth + 1, budget)]
                                   for k, v in value.items()]}
    if t is set or t is frozenset:
        return {"$": t.__name__, "v": [encode(v, depth + 1, budget) for v in value]}
    if t is bytes:
        return {"$": "bytes", "v": value.hex()}
    if t is complex:
        return {"$": "complex", "v": [repr(value.real), repr(value.imag)]}
    # Standard-library value types that references return: converted to their builtin
    # equivalent through the C-level dict/deque methods, so a patched method cannot run.
    if t in _DICT_LIKE:
        return {"$": "dict", "v": [[encode(k, depth + 1, budget), encode(v, depth + 1, budget)]
                                   for k, v in dict.items(value)]}
    if t is collections.deque:
        return [encode(v, depth + 1, budget) for v in list(value)]
    if t is re.Match:
        return True  # a match object is only ever truthy; comparing it to a value fails
    raise NotBuiltin(f"returned a value of non-builtin type {t.__module__}.{t.__qualname__}")
