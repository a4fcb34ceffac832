"""Exec tests decided outside the candidate's process: the two ends of the link between them.

A job with exec tests or a ``check`` runs as two processes. The *tester* is the job's child: it holds the tests,
their expected values and the event channel, and runs the tests (:mod:`wb_harness`). The *candidate's process* was
forked by the tester before the tester read its tests, from a worker that never read them (``wb_protocol.split_job``),
so it holds no test of this job or of any other, and not the event channel; it loads the program and answers the
tester's calls (:class:`Server`). Everything crosses by value (:mod:`wb_values`: exact builtin types); an object that
is not a plain value stays where it is and crosses as a handle, which the tester sees as a proxy (:class:`Tester`): a
class as a local class of the same name (an exception class as a subclass of its nearest builtin exception, so
``pytest.raises(IndexError)`` and ``except EmptyError`` behave), its instances as instances of it, a function as a
callable, a generator as an iterator. A function of the test passed into the candidate (a key, a callback) is a
callable there that runs in the tester and answers by value; a list, dict or set a call changed in place comes back
changed. So nothing the candidate does can write a test result: it can only answer the calls the tests make, and its
answers are plain values or handles.

Not covered: a test that compares two of the candidate's objects asks the candidate's own ``__eq__`` (as pytest
would); the entry point's return values must be plain values, so a forged ``__eq__`` there is refused. A test cannot
pass an object of its own other than a function or a builtin into the candidate. A module-level value of the
candidate is a snapshot taken after the program loaded. Each call is a round trip between two processes (tens of
microseconds).
"""

import builtins
import json
import operator
import sys
import types

import wb_protocol as protocol
from wb_values import DecodeError, NotBuiltin, decode_value, encode, plain_of

MAX_MESSAGE = 256 << 20
"""The largest message either end reads: past it the link is broken (the test fails)."""
LINK_ITEMS = 10**7
"""Most items one value crossing the link may have (the scorer's own bound is lower): a larger one, or one
nested deeper than :func:`wb_values.encode` goes, crosses as a handle."""

_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
"""The :mod:`operator` comparisons a proxy forwards (each its ``__op__``)."""
_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor", "lshift", "rshift")
"""The :mod:`operator` binary operators a proxy forwards (each its ``__op__`` and reflected ``__rop__``)."""

OPS = {
    name: getattr(operator, name)
    for name in (
        *_COMPARISONS,
        *_BINARY,
        "iadd",
        "isub",
        "imul",
        "itruediv",
        "ifloordiv",
        "imod",
        "ior",
        "iand",
        "ixor",
        "neg",
        "pos",
        "invert",
        "contains",
        "getitem",
        "setitem",
        "delitem",
        "index",
    )
}
OPS.update(
    len=len,
    iter=iter,
    next=next,
    bool=bool,
    repr=repr,
    str=str,
    hash=hash,
    abs=abs,
    int=int,
    float=float,
    reversed=reversed,
    round=round,
    format=format,
)
"""What the tester may ask of a candidate's object besides calls and attributes: Python's operators and builtins,
applied in the candidate's process (its own methods answer)."""


VALUE, BACK, OBJECT, NAMED = "value", "back", "object", "named"
"""How the tester decodes what the candidate's process sends (the tester decides; the sender is not trusted):

* ``VALUE``: plain values and the standard library's value types only, and iterators whose items are ``VALUE``
  again: the entry point's answers, comparisons, ``len``, ``bool``, ``str``, ``hash``, ...;
* ``BACK``: plain values, and handles the tester already holds: an argument a call changed in place;
* ``OBJECT``: also handles of functions, methods, classes, and objects of the classes the tests hold (named, imported,
  or the entry point): a helper's, a method's or an attribute's answer. Any other object is refused (its builtin
  value is used where it is an instance of a subclass of a builtin type);
* ``NAMED``: a module-level name of the candidate's that a test reads: an object of any class.
"""

MUTABLE = (list, dict, set)
"""Arguments a call may change in place: sent back after it (:meth:`_Peer.request`)."""


def _sync(old, new):
    """Make the caller's ``old`` what the callee left of its copy (same type: in place)."""
    if type(old) is list and type(new) is list:
        old[:] = new
    elif type(old) is dict and type(new) is dict or type(old) is set and type(new) is set:
        old.clear()
        old.update(new)


_NEXT = {"op": ("next",), "callattr": ("__next__",)}
"""The requests that may end an iteration with ``StopIteration``: an iterator's ``next``."""


class Gone(Exception):
    """The other end closed the link or broke the protocol: every later call fails the same way."""


def _builtin_name(obj):
    """``obj``'s name when it is that builtin itself (``len``, ``int``, ``ValueError``), else None."""
    name = getattr(obj, "__name__", None)
    return name if type(name) is str and getattr(builtins, name, None) is obj else None


def _builtin_exception(cls):
    """The nearest builtin exception class ``cls`` derives from (by name), else None."""
    for base in getattr(cls, "__mro__", ()):
        name = _builtin_name(base)
        if name and issubclass(base, BaseException):
            return name
    return None


class _Peer:
    """One end of the link: framed JSON messages (:func:`wb_protocol.frame`) over two pipes. A request is answered
    by ``{"ok": VALUE}`` or ``{"exc": EXCEPTION}``; while waiting for its answer an end serves the other end's
    requests (a test's callback called by the candidate, a candidate's call made by that callback)."""

    def __init__(self, rfd, wfd):
        self.rfd, self.wfd = rfd, wfd
        self.objects = {}  # handle -> an object of this end that the other end holds a handle of
        self.exported = {}  # id(object) -> its handle (the table keeps the object alive: ids are not reused)
        self.broken = None

    def export(self, obj):
        h = self.exported.get(id(obj))
        if h is None:
            h = len(self.objects) + 1
            self.objects[h] = obj
            self.exported[id(obj)] = h
        return h

    def send(self, obj):
        try:
            protocol.write_all(self.wfd, protocol.frame(obj))
        except OSError as e:
            self._break(f"the other process is gone ({e.strerror})")

    def _read(self, n):
        try:
            buf = protocol.read_exact(self.rfd, n)
        except OSError as e:
            self._break(f"the other process closed the link ({e.strerror})")
        if buf is None:
            self._break("the other process closed the link (it exited)")
        return buf

    def _break(self, why):
        self.broken = self.broken or why
        raise Gone(self.broken)

    def recv(self):
        if self.broken:
            raise Gone(self.broken)
        (n,) = protocol.HEADER.unpack(self._read(protocol.HEADER.size))
        if n > MAX_MESSAGE:
            self._break(f"a message of {n} bytes")
        try:
            msg = json.loads(self._read(n))
        except (ValueError, RecursionError):
            self._break("an unreadable message")
        if type(msg) is not dict:
            self._break("an unreadable message")
        return msg

    def request(self, msg, sent=None, mode=OBJECT):
        """Send ``msg``; serve the other end until its answer comes; the answer decoded in ``mode`` (or its
        exception raised). ``sent``: the ``(args, kwargs)`` the message carries, whose lists, dicts and sets the
        answer updates in place as the call left them there (a function that sorts its argument in place, or must
        not change it): what comes back is decoded as plain values (:data:`BACK`), like any other answer."""
        if self.broken:
            raise Gone(self.broken)
        self.send(msg)
        while True:
            reply = self.recv()
            if "op" in reply:
                self.send(self.serve_one(reply))
            elif "ok" in reply:
                try:
                    if sent is not None and type(reply.get("back")) is list:
                        for key, enc in reply["back"]:
                            _sync(sent[0][key] if type(key) is int else sent[1][key], self.decode(enc, BACK))
                    return self.decode(reply["ok"], mode)
                except (DecodeError, RecursionError, MemoryError, TypeError, ValueError, IndexError, KeyError) as e:
                    raise DecodeError(f"the candidate's answer: {e}") from None
            elif "exc" in reply:
                exc = self.exception(reply["exc"])
                if isinstance(exc, (StopIteration, StopAsyncIteration)) and msg.get("name") not in _NEXT.get(
                    msg.get("op"), ()
                ):
                    # only an iterator's ``next`` ends an iteration: raised by a call, it would end the test's
                    # ``all(map(...))`` early (PEP 479 makes it a RuntimeError in a generator for the same reason)
                    exc = RuntimeError(f"the candidate's call raised {type(exc).__name__}")
                raise exc
            else:
                self._break("an unexpected message")

    def serve_one(self, msg):
        try:
            result, sent = self.perform(msg)
            reply = {"ok": result}
            if sent is not None:
                back = []
                for k, v in (*enumerate(sent[0]), *sent[1].items()):
                    if type(v) in MUTABLE:
                        back.append([k, self.encode_back(v)])
                if back:
                    reply["back"] = back
            return reply
        except Gone:
            raise
        except BaseException as e:  # the exception crosses (SystemExit included: a test may expect it)
            return {"exc": self.describe_exception(e)}

    def serve(self):
        """Answer requests until the other end closes the link."""
        while True:
            try:
                msg = self.recv()
            except Gone:
                return
            if "op" in msg:
                self.send(self.serve_one(msg))

    def args_in(self, msg):
        return ([self.decode(a) for a in msg.get("args", [])], {str(k): self.decode(v) for k, v in msg.get("kw", [])})

    def call_in(self, msg, fn):
        """Perform a call request on ``fn``: (its answer encoded, the arguments it was given)."""
        args, kwargs = self.args_in(msg)
        return fn(*args, **kwargs), (args, kwargs)

    def args_out(self, args, kwargs):
        return {"args": [self.encode(a) for a in args], "kw": [[k, self.encode(v)] for k, v in kwargs.items()]}


# ----------------------------------------------------------------------------- the candidate's end


class Server(_Peer):
    """The candidate's process: performs the tester's requests on the program's objects. Its answers are values
    where they can be (:func:`wb_values.encode`), handles where not."""

    def encode(self, value):
        try:
            return encode(value, budget=[LINK_ITEMS], hook=self.describe)
        except NotBuiltin:  # too large or too deep to send: the tester works on it where it is
            return self.describe(value)

    def encode_value(self, value):
        """An answer that must be a plain value (the entry point's, an item of the iterator it returned): an
        iterator crosses as a handle whose items are plain values again; :class:`NotBuiltin` for anything else."""
        return encode(value, budget=[LINK_ITEMS], hook=self._value_hook)

    def _value_hook(self, obj):
        if _is_iterator(obj):
            return {"$": "iter", "v": self.export(obj)}
        return plain_of(obj, budget=[LINK_ITEMS])

    def encode_back(self, value):
        """An argument a call changed in place, as plain values; objects the tester already holds as handles."""
        try:
            return encode(value, budget=[LINK_ITEMS], hook=self._back_hook)
        except NotBuiltin as e:
            return {"$": "unsendable", "v": str(e)[:200]}

    def _back_hook(self, obj):
        if id(obj) in self.exported:
            return {"$": "held", "v": self.exported[id(obj)]}
        return plain_of(obj, budget=[LINK_ITEMS])

    def describe(self, obj):
        """The handle the tester gets for one of this process's objects (with the builtin value it is, when it is
        an instance of a subclass of a builtin type: the tester uses that unless its tests name the class)."""
        name = _builtin_name(obj)
        if name and isinstance(obj, type):
            return {"$": "builtin", "v": name}
        if isinstance(obj, types.ModuleType):
            return {"$": "module", "v": obj.__name__}
        if isinstance(obj, type):
            return {"$": "class", "v": [self.export(obj), str(obj.__name__), _builtin_exception(obj)]}
        if isinstance(obj, _Callback):
            return {"$": "callback", "v": obj.h}
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            return {"$": "function", "v": [self.export(obj), str(getattr(obj, "__name__", "function"))]}
        if _is_iterator(obj):
            return {"$": "iter", "v": self.export(obj)}
        cls = type(obj)
        desc = [
            self.export(obj),
            self.describe(cls) if not _builtin_name(cls) else {"$": "class", "v": [None, cls.__name__, None]},
        ]
        try:
            desc.append(plain_of(obj, budget=[LINK_ITEMS]))
        except (NotBuiltin, RecursionError):
            pass
        return {"$": "object", "v": desc}

    def decode(self, obj, mode=OBJECT):
        return decode_value(obj, hook=self._resolve)  # the tester's values and handles: no mode to apply here

    def _resolve(self, tag, v):
        if tag == "ref" and type(v) is int and v in self.objects:
            return self.objects[v]
        if tag == "mref" and type(v) is list and len(v) == 2 and v[0] in self.objects:
            return getattr(self.objects[v[0]], str(v[1]))
        if tag == "builtin" and type(v) is str and hasattr(builtins, v):
            return getattr(builtins, v)
        if tag == "callback" and type(v) is int:
            return _Callback(self, v)
        raise DecodeError(f"unknown handle {tag!r}")

    def perform(self, msg):
        op = msg["op"]
        if op == "call":
            result, sent = self.call_in(msg, self.objects[msg["h"]])
        elif op == "callattr":
            result, sent = self.call_in(msg, getattr(self.objects[msg["h"]], msg["name"]))
        elif op == "op":
            result, sent = self.call_in(msg, OPS[msg["name"]])
        else:
            result = sent = None
        if op in ("call", "callattr", "op"):
            if msg.get("value"):
                try:
                    return self.encode_value(result), sent
                except NotBuiltin as e:  # the entry point answers with plain values only
                    raise TypeError(f"NotBuiltin: {e}") from None
            return self.encode(result), sent
        if op == "attr":
            obj = self.objects[msg["h"]]
            value = getattr(obj, msg["name"])
            if isinstance(value, types.MethodType) and value.__self__ is obj:
                return {"$": "method", "v": [msg["h"], msg["name"]]}, None
            return self.encode(value), None
        if op == "setattr":
            setattr(self.objects[msg["h"]], msg["name"], self.decode(msg["value"]))
            return None, None
        if op == "delattr":
            delattr(self.objects[msg["h"]], msg["name"])
            return None, None
        raise ValueError(f"unknown request {op!r}")

    def describe_exception(self, e):
        try:
            args = encode(e.args)
        except BaseException:
            args = {"$": "tuple", "v": [_text(e)]}
        return {"cls": self.describe(type(e)), "args": args, "h": None if _builtin_name(type(e)) else self.export(e)}

    def exception(self, desc):
        """An exception the tester's callback raised: its nearest builtin class, with its message."""
        cls = (
            getattr(builtins, desc["cls"].get("v", ""), None)
            if type(desc) is dict and type(desc.get("cls")) is dict
            else None
        )
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            cls = RuntimeError
        try:
            return cls(*self.decode(desc.get("args")))
        except BaseException:
            return cls(str(desc.get("args"))[:2000])

    def listing(self, ns):
        """The program's module-level names: values where they can be, handles where not."""
        out = {}
        for k, v in list(ns.items()):
            if type(k) is not str or k.startswith("__"):
                continue
            out[k] = self.encode(v)
        return out


_ITERATOR_MODULES = ("builtins", "itertools", "collections", "_collections", "enum", "re", "csv")


def _is_iterator(obj):
    """A generator, or an iterator of the standard library's (``map``, ``zip``, ``itertools.chain``, a list's
    iterator): it crosses as an iterator whose items cross one by one (a class of the candidate's with
    ``__next__`` crosses as its object)."""
    if isinstance(obj, types.GeneratorType):
        return True
    t = type(obj)
    return getattr(t, "__module__", None) in _ITERATOR_MODULES and hasattr(t, "__next__") and hasattr(t, "__iter__")


def _text(e):
    try:
        return str(e)[:2000]
    except BaseException:
        return type(e).__name__


class _Callback:
    """A function of the test, as the candidate's process sees it: calling it runs it in the tester."""

    def __init__(self, server, h):
        self.server, self.h = server, h

    def __call__(self, *args, **kwargs):
        return self.server.request({"op": "call", "h": self.h, **self.server.args_out(args, kwargs)}, (args, kwargs))


# ----------------------------------------------------------------------------- the tester's end


class Tester(_Peer):
    """The tester's end: the candidate's objects as proxies; the tests' functions exported as callbacks."""

    def __init__(self, rfd, wfd):
        super().__init__(rfd, wfd)
        self.proxies = {}  # handle -> proxy (one per candidate object: ``is`` means what it means there)
        self.classes = {}  # class handle (or builtin class name) -> local class

    def encode(self, value):
        return encode(value, budget=[LINK_ITEMS], hook=self._ref)

    def encode_back(self, value):
        try:
            return self.encode(value)
        except NotBuiltin as e:
            return {"$": "unsendable", "v": str(e)[:200]}

    def _ref(self, obj):
        if isinstance(obj, CheckedIterator) and obj.peer is self:
            return {"$": "ref", "v": obj.h}
        if isinstance(obj, RemoteObject) and type(obj)._peer is self:
            return {"$": "ref", "v": object.__getattribute__(obj, "_h")}
        if isinstance(obj, _Function) and obj.peer is self:
            return {"$": "ref", "v": obj.h}
        if isinstance(obj, _Method) and obj.peer is self:
            return {"$": "mref", "v": [obj.h, obj.name]}
        if isinstance(obj, RemoteType) and obj._peer is self and obj._ch is not None:
            return {"$": "ref", "v": obj._ch}
        if (
            isinstance(obj, BaseException)
            and getattr(type(obj), "_peer", None) is self
            and "_h" in getattr(obj, "__dict__", {})
        ):
            return {"$": "ref", "v": obj.__dict__["_h"]}
        name = _builtin_name(obj)
        if name:
            return {"$": "builtin", "v": name}
        if callable(obj) and not isinstance(obj, type):
            return {"$": "callback", "v": self.export(obj)}
        raise NotBuiltin(f"a test's {type(obj).__name__} cannot cross into the candidate's process")

    def decode(self, obj, mode=OBJECT):
        return decode_value(obj, hook=lambda tag, v: self._proxy(tag, v, mode))

    def _proxy(self, tag, v, mode):
        if tag == "iter" and type(v) is int and mode != BACK:
            key = ("iter", v)
            if key not in self.proxies:
                self.proxies[key] = CheckedIterator(self, v, VALUE if mode == VALUE else OBJECT)
            return self.proxies[key]
        if mode == BACK:
            if tag == "held" and type(v) is int and v in self.proxies:
                return self.proxies[v]
            raise DecodeError(f"an argument was changed in place to hold {_what(tag, v)}, not a plain value")
        if mode == VALUE:
            raise DecodeError(f"the answer is {_what(tag, v)}, not a plain value")
        if tag == "builtin" and type(v) is str and isinstance(getattr(builtins, v, None), type):
            # a builtin type (``int``, ``ValueError``) is the tester's own; a builtin function the candidate names
            # (``decode = eval``) crosses as its function, called in its process: never the tester's ``eval``
            return getattr(builtins, v)
        if tag == "module" and type(v) is str:
            if v in sys.modules:  # never an import the candidate chose
                return sys.modules[v]
            raise DecodeError(f"module {v!r} (the candidate's) is not loaded here")
        if tag == "class" and type(v) is list and len(v) == 3:
            return self.local_class(*v)
        if tag == "function" and type(v) is list and len(v) == 2 and type(v[0]) is int:
            if v[0] not in self.proxies:
                self.proxies[v[0]] = _Function(self, v[0], str(v[1]))
            return self.proxies[v[0]]
        if tag == "method" and type(v) is list and len(v) == 2 and type(v[0]) is int and type(v[1]) is str:
            return _Method(self, v[0], v[1])
        if tag == "object" and type(v) is list and len(v) in (2, 3) and type(v[0]) is int:
            if v[0] in self.proxies:
                return self.proxies[v[0]]
            if mode != NAMED and not self._held_class(v[1]):
                if len(v) == 3:  # an instance of a subclass of a builtin type: the value it is
                    return self.decode(v[2], VALUE)
                raise DecodeError(
                    f"the answer is {_what(tag, v)}: only plain values, and objects of the classes the tests "
                    f"use, cross from the candidate"
                )
            cls = self.decode(v[1])
            if isinstance(cls, type) and issubclass(cls, _RemoteErrorAttrs):  # an exception, returned
                inst = cls()
                inst.__dict__["_h"] = v[0]
            elif isinstance(cls, RemoteType) and cls._peer is self:
                inst = object.__new__(cls)
                object.__setattr__(inst, "_h", v[0])
            else:
                raise DecodeError("an object handle without its class")
            self.proxies[v[0]] = inst
            return inst
        if tag == "callback" and type(v) is int and v in self.objects:
            return self.objects[v]
        raise DecodeError(f"unknown handle {tag!r}")

    def _held_class(self, desc):
        """Whether an object's class (as described) is one the tests already hold."""
        if type(desc) is not dict or desc.get("$") != "class" or type(desc.get("v")) is not list:
            return False
        h = desc["v"][0] if desc["v"] else None
        return type(h) is int and h in self.classes

    def local_class(self, h, name, exc):
        """The local stand-in for one of the candidate's classes (cached: one per class)."""
        key = h if type(h) is int else f"builtin:{name}"
        cls = self.classes.get(key)
        if cls is None:
            name = str(name)[:200]
            base = getattr(builtins, exc, None) if type(exc) is str else None
            if isinstance(base, type) and issubclass(base, BaseException):
                cls = type(name, (base, _RemoteErrorAttrs), {"_peer": self, "_ch": h})
            else:
                cls = RemoteType(
                    name, (RemoteObject,), {"_peer": self, "_ch": h if type(h) is int else None, "_methods": set()}
                )
            self.classes[key] = cls
        return cls

    def exception(self, desc):
        """The local exception for one the candidate raised."""
        if type(desc) is not dict:
            return Gone("an unreadable exception")
        try:
            cls = self.decode(desc.get("cls"))
        except (DecodeError, RecursionError, TypeError, ValueError) as e:
            return DecodeError(f"the candidate's exception: {e}")
        try:
            args = self.decode(desc.get("args"), VALUE)
        except (DecodeError, RecursionError, TypeError, ValueError):
            args = ()
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            return DecodeError(f"the candidate raised a non-exception {cls!r}")
        try:
            exc = cls(*args) if type(args) is tuple else cls(args)
        except BaseException:
            exc = cls()
        if type(desc.get("h")) is int and isinstance(exc, _RemoteErrorAttrs):
            exc.__dict__["_h"] = desc["h"]
        return exc

    def perform(self, msg):
        """A request from the candidate: only a call of a test's function it was given (nothing else of ours)."""
        if msg.get("op") != "call" or msg.get("h") not in self.objects:
            raise ValueError("the tester answers calls of the functions it passed, only")
        result, sent = self.call_in(msg, self.objects[msg["h"]])
        return self.encode(result), sent

    def describe_exception(self, e):
        return {
            "cls": {"$": "builtin", "v": _builtin_exception(type(e)) or "Exception"},
            "args": {"$": "tuple", "v": [_text(e)]},
        }

    def call(self, h, args, kwargs, value=False):
        msg = {"op": "call", "h": h, **self.args_out(args, kwargs)}
        if value:
            msg["value"] = True
        return self.request(msg, (args, kwargs), VALUE if value else OBJECT)

    def op(self, name, *args, mode=OBJECT):
        msg = {"op": "op", "name": name, **self.args_out(args, {})}
        if mode == VALUE:
            msg["value"] = True
        return self.request(msg, (args, {}), mode)

    def entry(self, desc, kind):
        """The task's entry point, as the tests call it. A function (or anything callable but a class: an object
        with ``__call__``, a ``Solution`` method) answers plain values only (:data:`VALUE`), and so does a class
        where the task's entry point is a function; a class entry point (KodCode's ``Stack``) makes objects the
        tests inspect. The tester decides from the task (``kind``), not from what the candidate says it is."""
        if type(desc) is not dict or type(desc.get("v")) is not list or not desc["v"]:
            raise DecodeError("an unreadable entry point")
        tag, h = desc.get("$"), desc["v"][0]
        if tag == "class" and kind != "function":
            return self.decode(desc)
        if tag in ("function", "object", "class") and type(h) is int:
            return _Function(self, h, str(desc["v"][1] if tag != "object" else "entry point")[:200], value=True)
        raise DecodeError("the entry point is not callable")


def _what(tag, v):
    """How a refused handle is named in the test's error."""
    if tag == "object" and type(v) is list and len(v) > 1 and type(v[1]) is dict and type(v[1].get("v")) is list:
        name = v[1]["v"][1] if len(v[1]["v"]) > 1 else "?"
        return f"a {str(name)[:80]} object"
    return f"a {str(tag)[:40]}"


class CheckedIterator:
    """An iterator of the candidate's process (a generator the entry point returned, a ``map``, the iterator of one
    of its objects): each item crosses on its own, decoded as the answers it came with were (``mode``)."""

    def __init__(self, peer, h, mode):
        self.peer, self.h, self.mode = peer, h, mode

    def __iter__(self):
        return self

    def __next__(self):
        return self.peer.op("next", self, mode=self.mode)

    def __repr__(self):
        return "<iterator (in the candidate's process)>"


class _RemoteErrorAttrs:
    """Mixed into a local stand-in for a candidate's exception class: attributes not found here are asked for."""

    def __getattr__(self, name):
        h = self.__dict__.get("_h")
        if h is None or name.startswith("__"):
            raise AttributeError(name)
        return type(self)._peer.request({"op": "attr", "h": h, "name": name})


class _Function:
    """A candidate's function (``value``: the entry point, whose answers must be plain values)."""

    def __init__(self, peer, h, name, value=False):
        self.peer, self.h, self.__name__, self.value = peer, h, name, value
        self.__qualname__ = name

    def __call__(self, *args, **kwargs):
        return self.peer.call(self.h, args, kwargs, value=self.value)

    def __repr__(self):
        return f"<function {self.__name__} (in the candidate's process)>"


class _Method:
    """A bound method of a candidate's object: one round trip per call."""

    def __init__(self, peer, h, name):
        self.peer, self.h, self.name = peer, h, name
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        return self.peer.request(
            {"op": "callattr", "h": self.h, "name": self.name, **self.peer.args_out(args, kwargs)}, (args, kwargs)
        )


class RemoteType(type):
    """The metaclass of the local stand-ins for a candidate's classes: calling one makes the object there."""

    def __call__(cls, *args, **kwargs):
        if cls._ch is None:
            raise TypeError(f"cannot create {cls.__name__} objects here")
        return cls._peer.call(cls._ch, args, kwargs)

    def __getattr__(cls, name):
        if name.startswith("__") or cls.__dict__.get("_ch") is None:
            raise AttributeError(name)
        return cls._peer.request({"op": "attr", "h": cls._ch, "name": name})


class RemoteObject:
    """A candidate's object: attributes, calls and operators are asked of it, in its process."""

    def __getattr__(self, name):
        cls = type(self)
        h = object.__getattribute__(self, "_h")
        if name in cls._methods:
            return _Method(cls._peer, h, name)
        value = cls._peer.request({"op": "attr", "h": h, "name": name})
        if isinstance(value, _Method):
            cls._methods.add(name)
        return value

    def __setattr__(self, name, value):
        type(self)._peer.request(
            {
                "op": "setattr",
                "h": object.__getattribute__(self, "_h"),
                "name": name,
                "value": type(self)._peer.encode(value),
            }
        )

    def __delattr__(self, name):
        type(self)._peer.request({"op": "delattr", "h": object.__getattribute__(self, "_h"), "name": name})

    def __call__(self, *args, **kwargs):
        return type(self)._peer.call(object.__getattribute__(self, "_h"), args, kwargs)

    def __repr__(self):
        try:
            return type(self)._peer.op("repr", self, mode=VALUE)
        except Exception:
            return f"<{type(self).__name__} object (in the candidate's process)>"

    def __enter__(self):
        return _Method(type(self)._peer, object.__getattribute__(self, "_h"), "__enter__")()

    def __exit__(self, *exc):
        return _Method(type(self)._peer, object.__getattribute__(self, "_h"), "__exit__")(*exc)


_VALUED = ("len", "bool", "hash", "str", "repr", "format", "int", "float", "index", "contains")
"""Operators whose answer Python requires to be of a builtin type: decoded as :data:`VALUE`."""


def _forward(op, swap=False):
    mode = VALUE if op in _VALUED else OBJECT

    def method(self, *args):
        peer = type(self)._peer
        if swap:
            return peer.op(op, args[0], self, mode=mode)
        return peer.op(op, self, *args, mode=mode)

    method.__name__ = op
    return method


def _compare(op, mode=OBJECT, swap=False):
    """A comparison or arithmetic between two of the candidate's objects asks the candidate (its class is under
    test); with a value of the test's it is not asked: the test's value never reaches the candidate's ``__eq__``
    or ``__sub__`` (``==`` is then identity, ``<`` and ``-`` a TypeError, as between unrelated types)."""

    def method(self, other):
        peer = type(self)._peer
        if not (isinstance(other, RemoteObject) and type(other)._peer is peer):
            return NotImplemented
        return peer.op(op, other, self, mode=mode) if swap else peer.op(op, self, other, mode=mode)

    return method


for _name, _op in (
    ("__len__", "len"),
    ("__iter__", "iter"),
    ("__next__", "next"),
    ("__bool__", "bool"),
    ("__hash__", "hash"),
    ("__str__", "str"),
    ("__contains__", "contains"),
    ("__getitem__", "getitem"),
    ("__setitem__", "setitem"),
    ("__delitem__", "delitem"),
    ("__reversed__", "reversed"),
    ("__abs__", "abs"),
    ("__neg__", "neg"),
    ("__pos__", "pos"),
    ("__invert__", "invert"),
    ("__int__", "int"),
    ("__float__", "float"),
    ("__index__", "index"),
    ("__round__", "round"),
    ("__format__", "format"),
):
    setattr(RemoteObject, _name, _forward(_op))
for _name, _op in (
    ("__iadd__", "iadd"),
    ("__isub__", "isub"),
    ("__imul__", "imul"),
    ("__ior__", "ior"),
    ("__iand__", "iand"),
):
    setattr(RemoteObject, _name, _compare(_op))
for _op in _COMPARISONS:
    setattr(RemoteObject, f"__{_op}__", _compare(_op, VALUE))
for _op in _BINARY:
    _dunder = _op.rstrip("_")
    setattr(RemoteObject, f"__{_dunder}__", _compare(_op))
    setattr(RemoteObject, f"__r{_dunder}__", _compare(_op, swap=True))
