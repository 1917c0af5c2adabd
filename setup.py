"""The one compiled part: history/_linescan.c, optional (without a C compiler the reader uses regexes)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("ftharness.history._linescan", ["history/_linescan.c"], optional=True,
                             extra_compile_args=["-O2"])])
