"""The ``extern "C" void solve(...)`` of a CUDA (.cu) or HIP (.hip) version, read from its source.

Pure text: the build step checks the signature before it compiles, and the child binds each
parameter to setup()'s values in order (kopt.inside.cuda) with the types read here. Every problem
is one line naming the file and the parameter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# C element types of pointer parameters, as torch's dtype names (void* takes any tensor)
POINTER_TYPES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "__half": "float16",
    "nv_bfloat16": "bfloat16",
    "__nv_bfloat16": "bfloat16",
    "hip_bfloat16": "bfloat16",
    "__hip_bfloat16": "bfloat16",
    "int8_t": "int8",
    "char": "int8",
    "signed char": "int8",
    "uint8_t": "uint8",
    "unsigned char": "uint8",
    "bool": "bool",
    "int16_t": "int16",
    "short": "int16",
    "int": "int32",
    "int32_t": "int32",
    "int64_t": "int64",
    "long": "int64",
    "long long": "int64",
    "void": None,
}
# C scalar types: integer ones take Python ints, floating ones ints or floats
SCALAR_TYPES = {
    "int": "int32",
    "int32_t": "int32",
    "unsigned": "uint32",
    "unsigned int": "uint32",
    "uint32_t": "uint32",
    "long": "int64",
    "long long": "int64",
    "int64_t": "int64",
    "size_t": "uint64",
    "uint64_t": "uint64",
    "float": "float32",
    "double": "float64",
}
QUALIFIERS = {"const", "__restrict__", "__restrict", "restrict", "volatile"}

_SOLVE = re.compile(r'extern\s+"C"\s*(?:__host__\s+)?(?:\w+\s+)*void\s+solve\s*\(([^)]*)\)\s*\{', re.S)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


class SignatureError(ValueError):
    """The source has no usable solve(); the message names the file and the parameter."""


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str  # the C type without qualifiers: "float", "int64_t"
    pointer: bool
    const: bool
    dtype: str | None  # the torch dtype it takes ("float32"); None for void*

    def describe(self) -> str:
        return f"{'const ' if self.const else ''}{self.ctype}{'*' if self.pointer else ''} {self.name}"


def _param(text: str, i: int, file: Path) -> Param:
    words = text.replace("*", " * ").split()
    pointer = words.count("*")
    const = "const" in words[: words.index("*")] if pointer else "const" in words
    bare = [w for w in words if w not in QUALIFIERS and w != "*"]
    if len(bare) < 2:
        raise SignatureError(f"{file}: solve: parameter {i + 1} '{text.strip()}' has no type and name")
    name, ctype = bare[-1], " ".join(bare[:-1])
    if pointer > 1:
        raise SignatureError(f"{file}: solve: parameter '{name}' is a pointer to a pointer; pass tensors as T*")
    known = POINTER_TYPES if pointer else SCALAR_TYPES
    if ctype not in known:
        kind = "element type" if pointer else "scalar type"
        raise SignatureError(
            f"{file}: solve: parameter '{name}': unsupported {kind} '{ctype}' (known: {sorted(known)})"
        )
    return Param(name, ctype, bool(pointer), const, known[ctype])


def solve_params(source: str | Path) -> list[Param]:
    """The parameters of the file's ``extern "C" void solve(...)`` definition, in order."""
    file = Path(source)
    text = _COMMENTS.sub(" ", file.read_text())
    found = _SOLVE.findall(text)
    if not found:
        raise SignatureError(f'{file}: defines no extern "C" void solve(...) {{ ... }}')
    if len(found) > 1:
        raise SignatureError(f"{file}: defines solve() {len(found)} times")
    parts = [p for p in found[0].split(",") if p.strip() and p.strip() != "void"]
    params = [_param(p, i, file) for i, p in enumerate(parts)]
    names = [p.name for p in params]
    for n in names:
        if names.count(n) > 1:
            raise SignatureError(f"{file}: solve: parameter '{n}' appears twice")
    return params
