"""The llama.cpp peer: which llama-cpp-python is loaded, what it was compiled for, and whether
that is a fair match for the staticlm ISA it is compared with (issue 16).

A peer built without an ISA the machine has (a wheel built with GGML_NATIVE=OFF runs AVX2 on an
AVX-512 machine) makes staticlm look faster than llama.cpp is on that machine, so such a peer
is refused. When staticlm is asked for a narrower ISA (--isa avx2 on an AVX-512 machine), the
peer must be built for exactly that ISA: AVX2 on, AVX-512 off.
"""

import os
import re
import sys

NATIVE_BUILD = ('CMAKE_ARGS="-DGGML_NATIVE=ON" pip install --no-cache-dir --no-binary '
                'llama-cpp-python llama-cpp-python==0.3.36')
AVX2_BUILD = ('CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON '
              '-DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF" pip install --no-deps '
              '--no-cache-dir --no-binary llama-cpp-python --target %s llama-cpp-python==0.3.36')
DEFAULT_AVX2_PEER = "/opt/llamacpp-avx2"


class PeerError(RuntimeError):
    pass


def use_path(path):
    """Makes `import llama_cpp` load the llama-cpp-python installed in `path` (a pip --target
    directory). Must run before anything imports llama_cpp."""
    if "llama_cpp" in sys.modules:
        raise PeerError("llama_cpp was imported before --peer-path took effect")
    if not os.path.isdir(os.path.join(path, "llama_cpp")):
        raise PeerError("--peer-path %s holds no llama_cpp package" % path)
    sys.path.insert(0, os.path.abspath(path))


def describe():
    """{"version", "path", "system_info"} of the llama-cpp-python that `import llama_cpp` loads,
    or None when there is none."""
    try:
        import llama_cpp  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    info = llama_cpp.llama_print_system_info()
    return {"version": getattr(llama_cpp, "__version__", None),
            "path": os.path.dirname(llama_cpp.__file__),
            "system_info": (info.decode() if isinstance(info, bytes) else str(info)).strip()}


def features(system_info):
    """'CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 0 | …' -> {"SSE3": 1, "AVX2": 1, "AVX512": 0}."""
    return {name: int(value) for name, value in re.findall(r"([A-Z0-9_]+) = (\d+)", system_info)}


def machine_isas(simd_flags):
    """The staticlm ISAs a machine with these /proc/cpuinfo flags runs, best first."""
    flags = set(simd_flags)
    isas = []
    if {"avx512f", "avx512bw", "avx512vl", "avx2", "fma", "f16c"} <= flags:
        isas.append("avx512")
    if {"avx2", "fma", "f16c"} <= flags:
        isas.append("avx2")
    return isas


def check(peer, isa, simd_flags):
    """Raises PeerError unless `peer` (describe()) is a fair match for staticlm under `isa`
    ("auto", "avx512", "avx2", …) on a machine with `simd_flags`; returns the ISA the pairing
    compares ("avx512", "avx2", or `isa` when there is nothing to check)."""
    if peer is None:
        raise PeerError("llama-cpp-python is not installed; build it natively: " + NATIVE_BUILD)
    have = features(peer["system_info"])
    isas = machine_isas(simd_flags)
    wanted = isas[0] if isa == "auto" and isas else isa
    where = "llama-cpp-python %s at %s (%s)" % (peer["version"], peer["path"],
                                                peer["system_info"])
    if wanted == "avx512":
        if have.get("AVX512") != 1:
            raise PeerError(
                "the machine has AVX-512 but the peer's system info shows %s: %s. Build a "
                "native peer: %s" % ("AVX512 = 0" if have.get("AVX512") == 0 else
                                     "no AVX512 = 1", where, NATIVE_BUILD))
    elif wanted == "avx2":
        missing = [f for f in ("AVX2", "FMA", "F16C") if have.get(f) != 1]
        if missing:
            raise PeerError("the peer lacks %s for the AVX2 pairing: %s. Build one: %s" % (
                ", ".join(missing), where, NATIVE_BUILD if "avx512" not in isas
                else AVX2_BUILD % DEFAULT_AVX2_PEER))
        if have.get("AVX512") == 1:
            raise PeerError("staticlm runs AVX2 but the peer uses AVX-512 (AVX512 = 1): %s. "
                            "Build an AVX2 peer: %s" % (where, AVX2_BUILD % DEFAULT_AVX2_PEER))
    return wanted
