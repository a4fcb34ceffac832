"""How values cross between processes: builtin types only (exact types), so that a value with a forged ``__eq__``
never reaches a comparison. A job's child encodes what the candidate returned and the scorer decodes and compares
(``scoring.verdicts``); an exec test's calls into the candidate's process cross the same way (:mod:`wb_remote`).
Decoding is linear in what is received, whatever the sender chose (:func:`check_hashes`)."""

import collections
import datetime
import decimal
import fractions
import keyword
import re
import reprlib

_DICT_LIKE = (collections.Counter, collections.OrderedDict, collections.defaultdict)
_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.items()))
"""Dict views that compare as sets (``d.keys() == {1, 2}``): they cross as sets."""
_DATES = {datetime.date: "date", datetime.datetime: "datetime", datetime.time: "time"}
MAX_DECIMAL_CHARS = 5000
"""The longest decimal number's text that crosses (its digits and exponent)."""
MAX_FIELDS = 255
"""Most fields a namedtuple that crosses may have."""


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
    # The standard library's value types cross by value, rebuilt at the other end from plain parts (the receiver's
    # own class: a patched Fraction here changes what is sent, never how the receiver compares).
    if t is fractions.Fraction:
        return {"$": "fraction", "v": [encode(value.numerator, depth + 1), encode(value.denominator, depth + 1)]}
    if t is decimal.Decimal:
        return {"$": "decimal", "v": str(value)}
    if t in _DATES:
        return {"$": _DATES[t], "v": value.isoformat()}
    if t is datetime.timedelta:
        return {"$": "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if t is range:
        return {"$": "range", "v": [value.start, value.stop, value.step]}
    if t is bytearray:
        return {"$": "bytes", "v": bytes(value).hex()}
    if t in _VIEWS:
        return {"$": "set", "v": [encode(v, depth + 1, budget, hook) for v in value]}
    if t is type({}.values()):
        return [encode(v, depth + 1, budget, hook) for v in value]
    fields = _namedtuple_fields(t)
    if fields is not None:  # a namedtuple: the tuple it is, with its type's name and field names
        items = [encode(v, depth + 1, budget, hook) for v in tuple.__iter__(value)]
        return {"$": "namedtuple", "v": [t.__name__, list(fields), items]}
    if hook is not None:
        return hook(value)
    raise NotBuiltin(f"returned a value of non-builtin type {t.__module__}.{t.__qualname__}")


def _namedtuple_fields(t):
    """A namedtuple class's field names (plain identifiers), else None."""
    fields = t.__dict__.get("_fields") if issubclass(t, tuple) and tuple in t.__bases__ else None
    if type(fields) is not tuple or len(fields) > MAX_FIELDS or not all(_field_name(f) for f in fields):
        return None
    return fields


def _field_name(name):
    return type(name) is str and name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")


_BASES = (bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)


def plain_of(value, budget=None):
    """What an instance of a subclass of a builtin type (``class Row(list)``) is as that builtin value, read with the
    base type's own methods (its class's overrides never answer); :class:`NotBuiltin` for anything else."""
    t = type(value)
    base = next((b for b in _BASES if isinstance(value, b)), None)
    if base is None or t is base:
        raise NotBuiltin(f"a value of non-builtin type {t.__module__}.{t.__qualname__}")
    if base in (list, tuple, set, frozenset):
        plain = base(base.__iter__(value))
    elif base is dict:
        plain = dict(dict.items(value))
    elif base is str:
        plain = str.__str__(value)
    elif base is bytes:
        plain = bytes.__bytes__(value)
    elif base is int:  # (bool cannot be subclassed)
        plain = int.__index__(value)
    elif base is float:
        plain = float.__float__(value)
    else:
        plain = complex(complex.real.__get__(value), complex.imag.__get__(value))
    return encode(plain, budget=budget)


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


_NAMEDTUPLES: dict[tuple[str, tuple[str, ...]], type] = {}


def namedtuple_class(name, fields):
    """The receiver's own namedtuple class for a type name and its field names (one per pair: instances of one
    type compare and print alike); :class:`DecodeError` for names that are not plain identifiers."""
    if type(fields) is not list or len(fields) > MAX_FIELDS or not all(_field_name(f) for f in fields):
        raise DecodeError("bad namedtuple fields")
    if len(set(fields)) != len(fields) or type(name) is not str or not name.isidentifier() or keyword.iskeyword(name):
        raise DecodeError("bad namedtuple name")
    key = (name[:200], tuple(fields))
    cls = _NAMEDTUPLES.get(key)
    if cls is None:
        if len(_NAMEDTUPLES) > 4096:
            _NAMEDTUPLES.clear()
        cls = _NAMEDTUPLES[key] = collections.namedtuple(key[0], key[1])
    return cls


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
        if tag == "fraction" and type(v) is list and len(v) == 2:
            num, den = (decode_value(x, depth + 1) for x in v)
            if type(num) is not int or type(den) is not int or den <= 0:
                raise DecodeError("bad fraction")
            return fractions.Fraction(num, den)
        if tag == "decimal" and type(v) is str and len(v) <= MAX_DECIMAL_CHARS:
            try:
                return decimal.Decimal(v)
            except (ArithmeticError, ValueError):
                raise DecodeError("bad decimal") from None
        if tag in ("date", "datetime", "time") and type(v) is str and len(v) <= 64:
            try:
                return getattr(datetime, tag).fromisoformat(v)
            except ValueError:
                raise DecodeError(f"bad {tag}") from None
        if tag == "timedelta" and type(v) is list and len(v) == 3 and all(type(x) is int for x in v):
            try:
                return datetime.timedelta(days=v[0], seconds=v[1], microseconds=v[2])
            except OverflowError:
                raise DecodeError("bad timedelta") from None
        if tag == "range" and type(v) is list and len(v) == 3 and all(type(x) is int and abs(x) < 1 << 62 for x in v):
            if not v[2]:
                raise DecodeError("bad range")
            return range(*v)
        if tag == "iterated" and type(v) is list:  # what an iterator yielded, in a value test (wb_harness)
            return iter([decode_value(x, depth + 1, hook) for x in v])
        if tag == "namedtuple" and type(v) is list and len(v) == 3:
            cls = namedtuple_class(v[0], v[1])
            items = v[2] if type(v[2]) is list else None
            if items is None or len(items) != len(cls._fields):
                raise DecodeError("bad namedtuple")
            return cls._make(decode_value(x, depth + 1, hook) for x in items)
        if hook is not None and type(tag) is str:
            return hook(tag, v)
    raise DecodeError(f"not an encoded builtin value: {reprlib.repr(obj)[:80]}")  # bounded, however large obj
