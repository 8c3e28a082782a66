"""The compiled long-nardy move generator (nardy/long/_movegen.c), built at install.

Optional: without a C compiler (or if the build fails for any reason) the package still
installs, and nardy.long.movegen uses its pure-Python generator (the reference).
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
            self.warn(f"nardy: compiled move generator not built ({e}); using pure Python")

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
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
