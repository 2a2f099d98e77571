"""The optional compiled kernel (nbtext/_kernel.c, docs/kernel.md). optional=True: where it cannot
be compiled (no compiler, no Python headers), setuptools warns and the install goes on, and nbtext
runs its pure-Python path, which gives the same tokens and counts."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("nbtext._kernel", ["nbtext/_kernel.c", "nbtext/_mail.c"], depends=["nbtext/_buf.h"],
                           optional=True)])
