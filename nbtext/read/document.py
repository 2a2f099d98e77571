"""What the readers yield: Documents; errors that stop a file, raised or reported to an
``on_error`` (the entry points report and go on with the next file); a label's characters."""
from __future__ import annotations

from collections.abc import Iterator

from ..errors import BAD_NAME_CHAR, NbtextError

TYPE_CHECKING = False  # (typing is not imported: `nbtext classify` imports this module)
if TYPE_CHECKING:
    from collections.abc import Callable

    OnError = Callable[[NbtextError], object] | None  # told of each file that cannot be read


class Document:
    """One document: its id (a path, FILE:LINE, ...), its bytes or text, its label if known."""

    __slots__ = ("id", "data", "label")

    def __init__(self, id: str, data: bytes | str, label: str | None = None):
        self.id, self.data, self.label = id, data, label

    def __eq__(self, other):
        if not isinstance(other, Document):
            return NotImplemented
        return (self.id, self.data, self.label) == (other.id, other.data, other.label)

    __hash__ = None

    def __repr__(self) -> str:
        return f"Document(id={self.id!r}, label={self.label!r}, {len(self.data)} bytes)"


def _report(error: NbtextError, on_error: OnError) -> None:
    if on_error is None:
        raise error
    on_error(error)


def _guarded(docs: Iterator[Document], on_error: OnError) -> Iterator[Document]:
    """docs; with on_error, an error reading them is reported there and ends them."""
    if on_error is None:
        return docs
    return _reporting(docs, on_error)


def _reporting(docs: Iterator[Document], on_error) -> Iterator[Document]:
    try:
        yield from docs
    except NbtextError as e:
        on_error(e)


def _short_repr(value) -> str:
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def _label_chars(label: str, where: str) -> str:
    if BAD_NAME_CHAR.search(label):
        raise NbtextError(f"{where}: bad label {_short_repr(label)}: a label cannot hold control "
                          f"characters (tab, newline, NUL, ...) or invalid Unicode")
    return label
