"""`record`: the part of `dataclasses.dataclass` the pre-job hook's own classes use, without its import.

`import dataclasses` brings `inspect` (and with it `ast`, `dis`, `tokenize`, `linecache`) and compiles an
`__init__`, `__eq__`, `__repr__`… for every class: about a tenth of `tfdoctor check` on a 2-CPU node
(benchmarks/check_speed_ab.py). The few classes on the hook's path (Finding, CheckResult, the fixes,
Report, Unknown, Machine, Registry) are declared with `@record` instead: the same annotations, defaults and
`field(default=…, default_factory=…, init=False)`, the same behaviour — keyword or positional construction
in field order, equality and hashing by fields, a readable repr, and with `frozen=True` no assignment after
construction (FrozenInstanceError, an AttributeError as in dataclasses). One shared `__init__` reads the
fields from the class, so nothing is compiled per class. Everything else in tfdoctor keeps dataclasses.
"""

from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False  # as typing's, which the pre-job hook does not import (docs/writing-a-check.md)
if TYPE_CHECKING:
    from typing import Any

_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record."""


class Field:
    """A field's default, default factory, and whether __init__ takes it."""

    __slots__ = ("default", "default_factory", "init", "name")

    def __init__(self, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None,
                 init: bool = True) -> None:
        self.name = ""
        self.default, self.default_factory, self.init = default, default_factory, init


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None, init: bool = True) -> Any:
    return Field(default, default_factory, init)


def _fields(cls: type) -> tuple[Field, ...]:
    found: dict[str, Field] = {}
    for klass in reversed(cls.__mro__):
        for name, annotation in vars(klass).get("__annotations__", {}).items():
            if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
                continue
            value = vars(klass).get(name, _MISSING)
            spec = value if isinstance(value, Field) else Field(default=value)
            spec.name = name
            found[name] = spec
    return tuple(found.values())


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    fields = type(self).__record_fields__
    takes = [f for f in fields if f.init]
    if len(args) > len(takes):
        raise TypeError(f"{type(self).__name__}() takes {len(takes)} positional arguments but {len(args)} were given")
    unknown = set(kwargs) - {f.name for f in takes}
    if unknown:
        raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    given = dict(zip((f.name for f in takes), args, strict=False))  # fewer args than fields: the rest by keyword
    for name in kwargs:
        if name in given:
            raise TypeError(f"{type(self).__name__}() got multiple values for argument {name!r}")
    given.update(kwargs)
    for spec in fields:
        if spec.init and spec.name in given:
            value = given[spec.name]
        elif spec.default_factory is not None:
            value = spec.default_factory()
        elif spec.default is not _MISSING:
            value = spec.default
        else:
            raise TypeError(f"{type(self).__name__}() missing required argument: {spec.name!r}")
        object.__setattr__(self, spec.name, value)
    post_init = getattr(self, "__post_init__", None)
    if post_init is not None:
        post_init()


def _values(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, f.name) for f in type(self).__record_fields__)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash(_values(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in type(self).__record_fields__)
    return f"{type(self).__qualname__}({shown})"


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    if name in {f.name for f in type(self).__record_fields__}:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)  # a functools.cached_property, say


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def record(cls: type | None = None, *, frozen: bool = False) -> Any:
    """`@record` / `@record(frozen=True)`: a class with dataclass behaviour for its annotated fields."""

    def wrap(klass: type) -> type:
        fields = _fields(klass)
        klass.__record_fields__ = fields  # type: ignore[attr-defined]
        for spec in fields:  # the class attribute left by a default is the default, as in dataclasses
            if isinstance(vars(klass).get(spec.name), Field):
                if spec.default is _MISSING:
                    delattr(klass, spec.name)
                else:
                    setattr(klass, spec.name, spec.default)
        klass.__init__ = _init  # type: ignore[misc]
        klass.__eq__ = _eq  # type: ignore[method-assign,assignment]
        klass.__repr__ = _repr  # type: ignore[method-assign,assignment]
        klass.__hash__ = _hash if frozen else None  # type: ignore[method-assign,assignment]
        if frozen:
            klass.__setattr__ = _frozen_setattr  # type: ignore[method-assign,assignment]
            klass.__delattr__ = _frozen_delattr  # type: ignore[method-assign,assignment]
        return klass

    return wrap if cls is None else wrap(cls)


# What typing.NamedTuple does with a class body, less its check of each annotation: under
# `from __future__ import annotations` every annotation is a string, and that check compiles each one into
# a ForwardRef (106 fields on the pre-job hook's path: ~1.5 ms of it on a 2-CPU node).
_NAMEDTUPLE_OWN = frozenset({"__module__", "__annotations__", "__dict__", "__weakref__", "__qualname__"})


def value_tuple(cls: type) -> Any:
    """`@value_tuple` on a class whose body would make a `typing.NamedTuple`: the same class — a namedtuple
    of its annotated fields in order, their defaults (none may follow a field without one), its methods,
    properties and docstring, `__annotations__` as written — built by collections.namedtuple directly."""
    from collections import namedtuple

    body = vars(cls)
    annotations = dict(body.get("__annotations__", {}))
    with_default: list[str] = []
    for name in annotations:
        if name in body:
            with_default.append(name)
        elif with_default:
            raise TypeError(f"Non-default namedtuple field {name} cannot follow default field"
                            f"{'s' if len(with_default) > 1 else ''} {', '.join(with_default)}")
    made = namedtuple(cls.__name__, list(annotations), defaults=[body[n] for n in with_default],
                      module=cls.__module__)
    made.__qualname__ = cls.__qualname__
    made.__annotations__ = annotations
    for key, value in body.items():
        if key not in _NAMEDTUPLE_OWN and key not in annotations:
            setattr(made, key, value)
    return made
