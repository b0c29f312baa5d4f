"""`carrier`: a frozen, slotted, keyword-only dataclass that is cheap to define.

`@dataclass(frozen=True, slots=True)` compiles six methods per class and then rebuilds
the class for its slots: about a millisecond per class, and helikon defines some
seventy carriers, which would put most of a second-tenth on `import helikon`. `carrier`
gives the same result (a real dataclass: `dataclasses.fields`, `replace`, pydantic and
pickling all work) but compiles only `__init__`; equality, hashing, `repr` and the
frozen guard are shared functions keyed on each class's field names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")

_MISSING = dataclasses.MISSING
_object_setattr = object.__setattr__


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(
        f"cannot assign to field {name!r} of a frozen {type(self).__name__}"
    )


def _frozen_delattr(self: object, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")


def _eq(self: Any, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    key = self.__carrier_key__
    return key(self) == key(other)


def _hash(self: Any) -> int:
    return hash((self.__class__, self.__carrier_key__(self)))


def _repr(self: Any) -> str:
    args = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__carrier_fields__)
    return f"{type(self).__qualname__}({args})"


def _getstate(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, name) for name in self.__carrier_fields__)


def _setstate(self: Any, state: tuple[Any, ...]) -> None:
    for name, value in zip(self.__carrier_fields__, state, strict=True):
        _object_setattr(self, name, value)


def _make_init(cls: type, fields: list[dataclasses.Field[Any]], kw_only: bool) -> Callable[..., None]:
    params: list[str] = []
    body: list[str] = []
    namespace: dict[str, Any] = {"_MISSING": _MISSING}
    for f in fields:
        name = f.name
        # Each slot's own descriptor setter: half the cost of `object.__setattr__`, which
        # looks the name up on every call (carriers are built on every event and decode).
        setter = f"_set_{name}"
        namespace[setter] = cls.__dict__[name].__set__
        if f.default is not _MISSING:
            namespace[f"_dflt_{name}"] = f.default
            params.append(f"{name}=_dflt_{name}")
            body.append(f"{setter}(self, {name})")
        elif f.default_factory is not _MISSING:
            namespace[f"_factory_{name}"] = f.default_factory
            params.append(f"{name}=_MISSING")
            body.append(f"{setter}(self, _factory_{name}() if {name} is _MISSING else {name})")
        else:
            params.append(name)
            body.append(f"{setter}(self, {name})")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    star = "*, " if kw_only else ""
    signature = f"self, {star}{', '.join(params)}" if params else "self"
    source = f"def __init__({signature}):\n    " + ("\n    ".join(body) or "pass")
    exec(source, namespace)  # the same technique dataclasses uses, once per class
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


@overload
def carrier(cls: type[T], /) -> type[T]: ...


@overload
def carrier(*, kw_only: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(dataclasses.field,))
def carrier(cls: type[T] | None = None, /, *, kw_only: bool = True) -> type[T] | Callable[[type[T]], type[T]]:
    """Make `cls` a frozen, slotted dataclass, keyword-only unless `kw_only=False`."""
    if cls is None:
        return lambda c: _build(c, kw_only)
    return _build(cls, kw_only)


def _build(cls: type[T], kw_only: bool) -> type[T]:
    dataclasses.dataclass(init=False, repr=False, eq=False, kw_only=kw_only)(cls)
    fields = list(dataclasses.fields(cls))  # pyright: ignore[reportArgumentType]
    names = tuple(f.name for f in fields)
    namespace = {
        k: v for k, v in cls.__dict__.items() if k not in names and k not in ("__dict__", "__weakref__")
    }
    namespace["__slots__"] = names
    slotted: Any = type(cls)(cls.__name__, cls.__bases__, namespace)
    slotted.__qualname__ = cls.__qualname__
    slotted.__init__ = _make_init(slotted, fields, kw_only)
    slotted.__carrier_fields__ = names
    slotted.__carrier_key__ = attrgetter(*names) if names else _no_key
    slotted.__match_args__ = names
    slotted.__setattr__ = _frozen_setattr
    slotted.__delattr__ = _frozen_delattr
    slotted.__eq__ = _eq
    slotted.__hash__ = _hash
    if "__repr__" not in cls.__dict__:
        slotted.__repr__ = _repr
    slotted.__getstate__ = _getstate
    slotted.__setstate__ = _setstate
    # Tell dataclasses (and pydantic) what the class really is now.
    params: Any = slotted.__dataclass_params__
    params.init = params.repr = params.eq = params.frozen = True
    return slotted


def _no_key(_self: object) -> tuple[()]:
    return ()
