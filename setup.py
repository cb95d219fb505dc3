"""How pip builds ringsim's Python distribution (pyproject.toml says what
it is): the packages ringsim (python/ringsim) and ringsim_plot
(tools/ringsim_plot, with the page's template ringsim_viewer.html inside),
and libringsim.so, which CMake builds and which goes inside ringsim (where
ringsim._lib looks "beside the package").

The library is built in build-python/cmake (under the source tree, as
setuptools' own build-python/), configured once and rebuilt as CMake sees
fit, so `pip install .` then `pip install -e .` compile it once. An
editable install puts the library in python/ringsim/ (ignored by git), as
setuptools wants of a build step in editable mode.

    CMAKE_ARGS="-DRINGSIM_WITH_MPI=OFF" pip install --no-build-isolation .

CMAKE_ARGS: more arguments for CMake's configure step;
CMAKE_BUILD_PARALLEL_LEVEL: its jobs (default: the cores).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = "libringsim.so"
VIEWER = "ringsim_viewer.html"


def project_version():
    """project(ringsim VERSION X.Y.Z) of CMakeLists.txt."""
    with open(os.path.join(HERE, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"^project\(ringsim VERSION (\d+\.\d+\.\d+)\b", f.read(),
                      re.M)
    if not m:
        sys.exit("setup.py: no project(ringsim VERSION X.Y.Z) in "
                 "CMakeLists.txt")
    return m.group(1)


def build_library(build_dir):
    """libringsim.so built by CMake in build_dir (the library alone: no
    tests, benchmarks or fuzz replays); its path."""
    cmake = shutil.which("cmake")
    if cmake is None:
        sys.exit("setup.py: cmake not found on PATH: it builds libringsim.so "
                 "(apt-get install cmake)")
    configure = [cmake, "-S", HERE, "-B", build_dir,
                 "-DCMAKE_BUILD_TYPE=Release", "-DRINGSIM_BUILD_TESTS=OFF",
                 "-DRINGSIM_BUILD_BENCH=OFF",
                 "-DRINGSIM_BUILD_FUZZ_REPLAY=OFF",
                 *shlex.split(os.environ.get("CMAKE_ARGS", ""))]
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or \
        str(os.cpu_count() or 1)
    build = [cmake, "--build", build_dir, "--target", "ringsim_shared",
             "--parallel", jobs]
    for command in (configure, build):
        print(" ".join(shlex.quote(a) for a in command), flush=True)
        subprocess.run(command, check=True)
    return os.path.join(build_dir, LIBRARY)


class BuildPy(build_py):
    """build_py, then libringsim.so inside ringsim and the page's template
    inside ringsim_plot (in the source tree when editable: the template is
    already beside the package there)."""

    def run(self):
        super().run()
        build_base = self.get_finalized_command("build").build_base
        library = build_library(os.path.abspath(
            os.path.join(build_base, "cmake")))
        if self.editable_mode:
            self.copy_file(library, os.path.join(HERE, "python", "ringsim",
                                                 LIBRARY))
            return
        self.copy_file(library, os.path.join(self.build_lib, "ringsim",
                                             LIBRARY))
        self.copy_file(os.path.join(HERE, "tools", VIEWER),
                       os.path.join(self.build_lib, "ringsim_plot", VIEWER))

    def get_outputs(self, include_bytecode=1):
        outputs = super().get_outputs(include_bytecode)
        if not self.editable_mode:
            outputs += [os.path.join(self.build_lib, "ringsim", LIBRARY),
                        os.path.join(self.build_lib, "ringsim_plot", VIEWER)]
        return outputs


class BinaryDistribution(Distribution):
    """A distribution that holds a compiled library: its wheel is tagged
    for this Python and platform, not "any"."""

    def has_ext_modules(self):
        return True


setup(
    version=project_version(),
    packages=["ringsim", "ringsim_plot"],
    package_dir={"ringsim": "python/ringsim",
                 "ringsim_plot": "tools/ringsim_plot"},
    cmdclass={"build_py": BuildPy},
    distclass=BinaryDistribution,
    options={"build": {"build_base": "build-python"}},
    zip_safe=False,
)
