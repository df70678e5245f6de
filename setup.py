"""Builds the Python module `stoke` with CMake (the python/ target) and installs
the extension. See pyproject.toml for the command; STOKE_CMAKE_ARGS adds
arguments to CMake's configure step (e.g. -DSTOKE_WITH_CUDA=OFF)."""
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        root = os.path.dirname(os.path.abspath(__file__))
        build = os.path.join(root, "build", "pip")
        out = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        configure = ["cmake", "-S", root, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                     f"-DPython3_EXECUTABLE={sys.executable}", "-DSTOKE_BUILD_TESTS=OFF",
                     "-DSTOKE_BUILD_TOOLS=OFF", "-DSTOKE_BUILD_EXAMPLES=OFF",
                     "-DSTOKE_BUILD_PYTHON=ON"]
        # Ninja and ccache where the machine has them (tools/install_deps.sh
        # installs both): a rebuild compiles only what changed.
        if shutil.which("ninja") and not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            configure += ["-G", "Ninja"]
        if shutil.which("ccache"):
            configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
            # As tools/build.sh: another clone of the same sources hits the cache.
            os.environ.setdefault("CCACHE_BASEDIR", root)
            os.environ.setdefault("CCACHE_NOHASHDIR", "1")
        configure += shlex.split(os.environ.get("STOKE_CMAKE_ARGS", ""))
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", build, "--target", "stoke_python", "--parallel",
                        str(os.cpu_count() or 1)], check=True)
        os.makedirs(out, exist_ok=True)
        built = os.path.join(build, "python")
        for name in os.listdir(built):
            if name.startswith("stoke.") and name.endswith(".so"):
                self.copy_file(os.path.join(built, name), os.path.join(out, name))


setup(ext_modules=[CMakeExtension("stoke")], cmdclass={"build_ext": CMakeBuild})
