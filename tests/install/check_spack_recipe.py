"""Checks jobs/spack/package.py without Spack (which is not installable here):
it compiles, and every CMake variable it defines from a variant is an option()
of CMakeLists.txt, every variant it declares is used.  usage: SOURCE_DIR"""
import pathlib
import re
import sys

src = pathlib.Path(sys.argv[1])
recipe = src / "jobs/spack/package.py"
text = recipe.read_text()
compile(text, str(recipe), "exec")  # syntax, as py_compile, without writing __pycache__
options = set(re.findall(r"option\((GDR_\w+)", (src / "CMakeLists.txt").read_text()))
options |= set(re.findall(r"option\((GDR_\w+)", (src / "src/memory/cuda/CMakeLists.txt").read_text()))
mapped = dict(re.findall(r'define_from_variant\("(\w+)",\s*"(\w+)"\)', text))
declared = set(re.findall(r'^\s*variant\("(\w+)"', text, re.M)) | {"cuda"}  # cuda: from CudaPackage
errors = [f"{var} (variant {v}) is no option() in CMakeLists.txt" for var, v in mapped.items() if var not in options]
errors += [f"variant {v} is not declared" for v in mapped.values() if v not in declared]
errors += [f"variant {v} is declared but maps to no CMake option" for v in declared if v not in mapped.values()]
for want in ("cuda", "ucx", "verbs"):
    if want not in mapped.values():
        errors.append(f"no +{want} variant mapped")
if errors:
    sys.exit("check_spack_recipe: " + "; ".join(errors))
print("check_spack_recipe: ok:", ", ".join(f"+{v} -> {k}" for k, v in sorted(mapped.items())))
