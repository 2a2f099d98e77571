"""Small value classes declared like dataclasses, without the dataclasses module.

dataclasses writes each class's __init__, __eq__ and __repr__ as source code and compiles it
at import time; for the handful of classes on `nbtext classify`'s path that is a large share
of a run that must start fast. A Record reads its fields from the class annotations (in
order, base classes first), takes their defaults from the class attributes, and calls
__post_init__ to validate, as a dataclass would.
"""
from __future__ import annotations


class Record:
    _fields: tuple = ()
    _frozen: bool = True

    def __init_subclass__(cls, frozen: bool = True, **kw):
        super().__init_subclass__(**kw)
        names: list[str] = []
        for klass in reversed(cls.__mro__):
            for name in klass.__dict__.get("__annotations__", {}):
                if not name.startswith("_") and name not in names:
                    names.append(name)
        cls._fields, cls._frozen = tuple(names), frozen
        if frozen:
            cls.__hash__ = lambda self: hash(self.astuple())
        else:
            cls.__hash__ = None

    def __init__(self, *args, **kw):
        cls = type(self)
        if len(args) > len(cls._fields):
            raise TypeError(f"{cls.__name__} takes at most {len(cls._fields)} values")
        for name, value in zip(cls._fields, args):
            if name in kw:
                raise TypeError(f"{cls.__name__}: {name} given twice")
            kw[name] = value
        unknown = set(kw) - set(cls._fields)
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {sorted(unknown)[0]!r}")
        for name in cls._fields:
            if name in kw:
                value = kw[name]
            elif hasattr(cls, name):
                value = getattr(cls, name)
            else:
                raise TypeError(f"{cls.__name__} needs {name}")
            object.__setattr__(self, name, value)
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()

    def __setattr__(self, name, value):
        if self._frozen:
            raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name}")
        object.__setattr__(self, name, value)

    def astuple(self) -> tuple:
        return tuple(getattr(self, name) for name in self._fields)

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in self._fields}

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self.astuple() == other.astuple()

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({inner})"

    @classmethod
    def from_dict(cls, d: dict):
        """The record a stored dict describes; a key it does not know is refused (a file from
        a newer nbtext, or a damaged one), with TypeError naming it."""
        unknown = sorted(set(d) - set(cls._fields))
        if unknown:
            raise TypeError(f"unknown {cls.__name__} field {unknown[0]!r}")
        return cls(**d)
