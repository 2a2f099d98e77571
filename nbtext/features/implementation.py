"""Which implementation tokenizes, counts and sorts: the compiled kernel (nbtext/_kernel.c) or
the pure-Python reference. The choice never changes a token or a score (tests/test_kernel.py
holds the two paths to identical tokens, keys and rows, and the kernel's Rows.moved and
Rows @ W to numpy's arrays bit for bit; CI runs the suite on each; scripts/export_equality.py
compares their models), so it is not a setting: an entry point makes it (nbtext.__main__ from
NBTEXT_KERNEL; the test suite's conftest the same way) and hands it here with ``use``.
Unchosen, the library runs the kernel when it was built (for this KERNEL_ABI). Forked workers
inherit the choice; spawned ones (loky, Dask) run the default, which counts the same.
"""
from __future__ import annotations

TYPE_CHECKING = False  # (typing is not imported: `nbtext classify` imports this module)
if TYPE_CHECKING:
    from types import ModuleType

CHOICES = ("", "c", "python")
_choice = ""

# The compiled kernel's interface, which the Python code calls: raise it with any change to
# nbtext/_c/ that Python relies on (a function, type, argument or result added, removed or
# changed). setup.py reads it here and compiles it in (-DNBTEXT_KERNEL_ABI; the module's ABI);
# compiled() runs a kernel built with another (or none: built before there was one) as one not
# built, since a stale build imports fine and then fails mid-run on what it lacks.
KERNEL_ABI = 1


def use(choice: str) -> str:
    """Run ``choice`` from now on ("" the kernel when it was built, else Python; "python"; "c",
    the kernel or an error), checked where it is first used, as ``compiled`` is asked; returns
    the choice it replaces."""
    global _choice
    previous, _choice = _choice, choice
    return previous


def compiled() -> ModuleType | None:
    """The compiled kernel module, or None for the pure-Python path (which a kernel not built,
    or built for another KERNEL_ABI, also gives unless "c" was chosen)."""
    choice = _choice
    if choice not in CHOICES:
        from ..errors import NbtextError

        raise NbtextError(f"NBTEXT_KERNEL must be one of c, python or empty, got {choice!r}")
    if choice == "python":
        return None
    try:
        from .. import _kernel
    except ImportError:
        return _unusable(choice, "was not built (reinstall nbtext where a C compiler is found)")
    abi = getattr(_kernel, "ABI", None)
    if abi != KERNEL_ABI:
        from ..errors import shown

        return _unusable(choice, f"is stale: {shown(str(_kernel.__file__))} was built from other C sources "
                                 f"({'no kernel ABI' if abi is None else f'kernel ABI {abi}'}, this nbtext needs "
                                 f"{KERNEL_ABI}); reinstall nbtext to rebuild it")
    return _kernel


def _unusable(choice: str, why: str) -> None:
    """None, the pure-Python path, for a kernel that cannot run; an error when "c" asked for it."""
    if choice == "c":
        from ..errors import KernelError

        raise KernelError(f"NBTEXT_KERNEL=c, but nbtext's compiled kernel {why}") from None
    return None
