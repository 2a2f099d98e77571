"""The optional compiled kernel (nbtext/_c/, docs/kernel.md): one extension module, nbtext._kernel,
from every C file there (module.c holds its table; each other file one concern behind its header).
optional=True: where it cannot be compiled (no compiler, no Python headers), setuptools warns and
the install goes on, and nbtext runs its pure-Python path, which gives the same tokens and counts.

-ffp-contract=off: the kernel's sums of products (rows_dot) must round each product as numpy
does, which a fused multiply-add (a compiler targeting FMA may make one) would not."""
import sys
from pathlib import Path

from setuptools import Extension, setup

FLAGS = [] if sys.platform == "win32" else ["-ffp-contract=off"]
C = Path("nbtext") / "_c"

setup(ext_modules=[Extension("nbtext._kernel", sorted(str(p) for p in C.glob("*.c")),
                             depends=sorted(str(p) for p in C.glob("*.h")), extra_compile_args=FLAGS, optional=True)])
