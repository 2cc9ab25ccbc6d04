"""ptxas's resources per kernel, from a real nvcc 13.0 log (tests/fixtures/build/, made from the
.cu beside it with -arch=sm_90a -maxrregcount=24 so that one kernel spills)."""

from kopt.profilers import ptxas
from tests.helpers import FIXTURES


def test_registers_spills_stack_and_shared_memory_per_kernel():
    log = (FIXTURES / "build" / "ptxas_sm90a_nvcc13.log").read_text()
    tk, spill = ptxas.parse(log)
    assert tk["mangled"] == "_Z2tkILi64EEvPKfPfi" and tk["arch"] == "sm_90a"
    assert (tk["n_regs"], tk["n_spills"], tk["shared_bytes"], tk["barriers"], tk["stack_bytes"]) == (24, 0, 1024, 1, 0)
    assert spill["name"] == "spill"  # extern "C": not mangled
    assert (spill["n_regs"], spill["spill_store_bytes"], spill["spill_load_bytes"], spill["n_spills"]) == (24, 8, 8, 16)
    assert (spill["stack_bytes"], spill["shared_bytes"]) == (2064, 0)


def test_cpp_names_are_demangled_where_cxxfilt_is_found():
    names = ptxas.demangle(["_Z2tkILi64EEvPKfPfi", "spill"])
    assert names["spill"] == "spill"
    assert names["_Z2tkILi64EEvPKfPfi"] == "void tk<64>(float const*, float*, int)"


def test_a_log_without_entry_functions_has_no_kernels():
    assert ptxas.parse("ptxas info    : 0 bytes gmem\n") == []
