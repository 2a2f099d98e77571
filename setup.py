"""The optional compiled kernel (nbtext/_c/, docs/kernel.md): one extension module, nbtext._kernel,
from every C file there (module.c holds its table; each other file one concern behind its header).
optional=True: where it cannot be compiled (no compiler, no Python headers), setuptools warns and
the install goes on, and nbtext runs its pure-Python path, which gives the same tokens and counts.

-ffp-contract=off: the kernel's sums of products (rows_dot) must round each product as numpy
does, which a fused multiply-add (a compiler targeting FMA may make one) would not.

NBTEXT_KERNEL_ABI: the kernel's interface version, whose one home is
nbtext.features.implementation.KERNEL_ABI (read from the file: the build runs before nbtext's
dependencies are installed); the module says it as its ABI, and nbtext runs no other."""
import ast
import sys
from pathlib import Path

from setuptools import Extension, setup

FLAGS = [] if sys.platform == "win32" else ["-ffp-contract=off"]
C = Path("nbtext") / "_c"
IMPLEMENTATION = Path("nbtext") / "features" / "implementation.py"


def kernel_abi() -> int:
    """KERNEL_ABI's value, as IMPLEMENTATION assigns it."""
    for node in ast.parse(IMPLEMENTATION.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["KERNEL_ABI"]:
            return int(ast.literal_eval(node.value))
    raise SystemExit(f"setup.py: {IMPLEMENTATION} assigns no KERNEL_ABI")


setup(ext_modules=[Extension("nbtext._kernel", sorted(str(p) for p in C.glob("*.c")),
                             depends=sorted(str(p) for p in C.glob("*.h")) + [str(IMPLEMENTATION)],
                             define_macros=[("NBTEXT_KERNEL_ABI", str(kernel_abi()))],
                             extra_compile_args=FLAGS, optional=True)])
