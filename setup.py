"""The compiled accelerators, built at install: the long-nardy move generator
(nardy/long/_movegen.c), short nardy's end boards (nardy/short/_movegen.c), the engines'
evaluation (engines/_evaluate.c) and the value
networks' inputs (engines/_network.c for long nardy, engines/_network_short.c for short).

Optional: without a C compiler (or if the build fails for any reason) the package still
installs, and nardy.long.movegen / engines.evaluate use their pure-Python code (the
reference).
Everything else about the package is in pyproject.toml.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """Build the accelerator if possible; a failure is a warning, never an error."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # no compiler at all, or a broken toolchain
            self.warn(f"nardy: accelerators not built ({e}); using pure Python")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:
            self.warn(f"nardy: {ext.name} not built ({e}); using pure Python")


setup(
    ext_modules=[
        Extension(
            "nardy.long._movegen",
            ["nardy/long/_movegen.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "nardy.short._movegen",
            ["nardy/short/_movegen.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "engines._evaluate",
            ["engines/_evaluate.c"],
            # no fused multiply-add: the equities must be bit-identical to the Python ones
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,
        ),
        Extension(
            "engines._network",
            ["engines/_network.c"],
            extra_compile_args=["-O3"],  # the first layer's sums vectorised
            optional=True,
        ),
        Extension(
            "engines._network_short",
            ["engines/_network_short.c"],
            # no fused multiply-add: the inputs must be bit-identical to numpy's
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,
        ),
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
