"""Building the package compiles its kernels into it (tltok_jit/compile/build_kernels.py): an installed
package runs at full speed from its first call. The rest of the metadata is in pyproject.toml."""

import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithKernels(build_py):
    """build_py, then the kernels' machine code into the built package (into the source tree for an
    editable install). TLTOK_BUILD_KERNELS=0 skips it (the kernels then compile on first use)."""

    def run(self):
        super().run()
        if os.environ.get("TLTOK_BUILD_KERNELS", "1") == "0":
            return
        root = HERE if getattr(self, "editable_mode", False) else os.path.abspath(self.build_lib)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        out = os.path.join(root, "tltok_jit", "compiled")
        reuse = os.path.join(HERE, "build", "tltok-kernels")
        subprocess.run([sys.executable, "-m", "tltok_jit.compile.build_kernels", out, "--reuse", reuse], env=env, cwd=root,
                       check=True)


class PlatformDistribution(Distribution):
    """The wheel carries machine code: tag it for this Python and platform."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithKernels}, distclass=PlatformDistribution)
