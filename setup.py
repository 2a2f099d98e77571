"""The optional compiled kernel (nbtext/_kernel.c, docs/kernel.md). optional=True: where it cannot
be compiled (no compiler, no Python headers), setuptools warns and the install goes on, and nbtext
runs its pure-Python path, which gives the same tokens and counts.

-ffp-contract=off: the kernel's sums of products (rows_dot) must round each product as numpy
does, which a fused multiply-add (a compiler targeting FMA may make one) would not."""
import sys

from setuptools import Extension, setup

FLAGS = [] if sys.platform == "win32" else ["-ffp-contract=off"]

setup(ext_modules=[Extension("nbtext._kernel", ["nbtext/_kernel.c", "nbtext/_mail.c"], depends=["nbtext/_buf.h"],
                           extra_compile_args=FLAGS, optional=True)])
