"""Records: classes compared, hashed and shown by their fields, as dataclasses are, for
the modules that `gb search` loads.

`dataclasses` imports `inspect` (and ast, dis, tokenize with it), ~7 ms of every start
on a slow host, and writes each class's methods with exec, ~0.5 ms a class: with the
dozen on a search's path, 13 ms of a ~110 ms `gb search`. A record's fields are its
`__init__`'s parameters, in order, which it stores with `_fill`; its class declares them
too, in the same order, for its readers (tests/test_records.py holds the two alike).
Like a dataclass's, its instances are equal when of the same class with equal fields,
shown as `Name(field=value, ...)`, and `replace` makes a copy with some fields changed.
A `Frozen` record cannot be changed and is hashed by its fields; any other is unhashable
(as a dataclass with `eq` is). The fields in `_unshown` are neither compared nor shown
(a dataclass's `field(compare=False, repr=False)`). The other modules keep their
dataclasses: only what a search loads is written this way.
"""

from __future__ import annotations

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    R = TypeVar("R", bound="Record")

__all__ = ["Frozen", "Record"]


class Record:
    """A class whose fields are its `__init__`'s parameters; see the module's docstring."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _unshown: frozenset[str] = frozenset()
    _shown: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None:  # else its base's fields
            code = init.__code__
            cls._fields = code.co_varnames[1 : code.co_argcount + code.co_kwonlyargcount]
        cls._shown = tuple(f for f in cls._fields if f not in cls._unshown)

    def _fill(self, *values: Any) -> None:
        """Store the fields' values, given in their order (past a Frozen's guard)."""
        for name, value in zip(self._fields, values, strict=True):
            object.__setattr__(self, name, value)

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._shown)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # as a dataclass's with eq: only a Frozen one is hashed

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        return f"{type(self).__qualname__}({shown})"

    def replace(self: R, **changes: Any) -> R:
        """A copy with `changes` (by field name) in place, as dataclasses.replace makes."""
        return type(self)(**{**self.as_dict(), **changes})

    def as_dict(self) -> dict[str, Any]:
        """The fields by name (their values as they are, not copied)."""
        return {name: getattr(self, name) for name in self._fields}


class Frozen(Record):
    """A record that cannot be changed once made, hashed by its fields."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[Any, ...]:
        # Made again by __init__ (copy, pickle): the guard refuses the default's setattr.
        return type(self), tuple(getattr(self, name) for name in self._fields)
