# Spack recipe for gdrbench. Use it from a local repository:
#   spack repo create ~/spack-gdr && mkdir -p ~/spack-gdr/packages/gdrbench
#   cp jobs/spack/package.py ~/spack-gdr/packages/gdrbench/ && spack repo add ~/spack-gdr
#   spack install gdrbench +cuda cuda_arch=90 +ucx +verbs
# Written against Spack's documented package API (CMakePackage, variant,
# depends_on, define_from_variant); each variant maps to an option() of
# CMakeLists.txt, which tests/install/check_spack_recipe.py checks.
from spack.package import *


class Gdrbench(CMakePackage, CudaPackage):
    """MPI microbenchmark for the communication paths of GPU clusters:
    GPUDirect RDMA against host staging, over MPI, UCX and raw verbs."""

    homepage = "https://example.invalid/gdrbench"
    git = "https://example.invalid/gdrbench.git"

    version("main", branch="main")

    # +cuda and cuda_arch come from CudaPackage.
    variant("ucx", default=True, description="UCX transport (host and CUDA memory)")
    variant("verbs", default=True, description="raw rdma-core verbs transport")

    depends_on("cmake@3.25:", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("mpi")
    depends_on("hdf5~mpi")
    depends_on("fmt")
    depends_on("cli11")
    depends_on("hwloc")
    depends_on("ucx", when="+ucx")
    depends_on("ucx+cuda", when="+ucx+cuda")
    depends_on("rdma-core", when="+verbs")
    depends_on("py-h5py", type="run")
    depends_on("py-numpy", type="run")
    depends_on("py-scipy", type="run")
    depends_on("py-matplotlib", type="run")
    depends_on("py-pandas", type="run")

    def cmake_args(self):
        args = [
            self.define_from_variant("GDR_WITH_CUDA", "cuda"),
            self.define_from_variant("GDR_WITH_UCX", "ucx"),
            self.define_from_variant("GDR_WITH_VERBS", "verbs"),
            self.define("GDR_BUILD_TESTS", False),
        ]
        if self.spec.satisfies("+cuda"):
            archs = self.spec.variants["cuda_arch"].value
            if archs and archs[0] != "none":
                args.append(self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(archs)))
        # cmake --install also installs share/man/man1/gdrbench.1 and the bash
        # completion (share/bash-completion/completions), written at build time by
        # the gdrbench just built (`gdrbench generate-docs`, cmake/GdrInstall.cmake).
        # The commit for --version: Spack's git fetch keeps .git in the stage,
        # which CMake reads (cmake/GdrVersion.cmake).
        return args
