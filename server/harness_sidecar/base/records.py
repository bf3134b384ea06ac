"""Plain data classes without ``dataclasses``: the first request of a fresh process pays for them.

``@dataclass`` writes and compiles each class's ``__init__``, ``__repr__`` and ``__eq__`` when
the module is imported, about half a millisecond a class on this machine; the resources a
first ``thread/start`` imports have a dozen. Here ``__slots__`` and ``__init__`` are written
out, and ``Record`` derives repr and equality from the slots (``_uncompared`` leaves some out).
"""

from __future__ import annotations

from typing import Any


class Record:
    __slots__: tuple[str, ...] = ()
    _uncompared: frozenset[str] = frozenset()

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__
                           if name not in self._uncompared)
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__
                   if name not in self._uncompared)

    __hash__ = None  # type: ignore[assignment]
