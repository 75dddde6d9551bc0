"""What the comparison ran on: CPU, cores, memory, OS, peer versions, staticlm commit."""

import datetime
import importlib.metadata
import os
import platform
import re
import socket
import subprocess


# (vendor, family, model) -> microarchitecture, for the file label; /proc/cpuinfo's model name
# is often a generic "Intel(R) Xeon(R) Processor" inside virtual machines.
_UARCH = {
    ("GenuineIntel", 6, 85): "skylake-sp",  # also Cascade/Cooper Lake (told apart by stepping)
    ("GenuineIntel", 6, 106): "icelake-sp",
    ("GenuineIntel", 6, 143): "sapphirerapids",
    ("GenuineIntel", 6, 207): "emeraldrapids",
    ("GenuineIntel", 6, 173): "graniterapids",
    ("GenuineIntel", 6, 151): "alderlake",
    ("GenuineIntel", 6, 183): "raptorlake",
}
_AMD_FAMILY = {23: "zen2", 25: "zen3-4", 26: "zen5"}


def _cpuinfo():
    model, flags, ident = None, "", {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = value
                elif key in ("vendor_id", "cpu family", "model") and key not in ident:
                    ident[key] = value.strip()
    except OSError:
        pass
    try:
        vendor, family, number = ident["vendor_id"], int(ident["cpu family"]), int(ident["model"])
        uarch = _UARCH.get((vendor, family, number)) or (
            _AMD_FAMILY.get(family) if vendor == "AuthenticAMD" else None)
        if uarch == "zen3-4":  # family 25 is both; of the two only Zen 4 has AVX-512
            uarch = "zen4" if "avx512f" in flags.split() else "zen3"
        model = "%s (family %d, model %d%s)" % (model, family, number,
                                                ", " + uarch if uarch else "")
    except (KeyError, ValueError):
        uarch = None
    simd = [f for f in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                        "avx_vnni", "amx_tile") if f in flags.split()]
    return model or platform.processor() or "unknown", simd, uarch


def _mem_total_bytes():
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _os_name():
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def _version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def git_commit(repo):
    """Short commit of the working tree, '-dirty' when sources outside bench/ have changes."""
    def git(*args):
        return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True,
                              check=False, timeout=30).stdout.strip()
    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        # bench/ holds this script and its results, not anything the staticlm binary is built from.
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (commit + "-dirty" if dirty else commit) if commit else None


def llama_cpp_system_info():
    """llama.cpp's own list of compiled-in CPU features (which SIMD paths it can use)."""
    try:
        import llama_cpp  # pylint: disable=import-outside-toplevel
        info = llama_cpp.llama_print_system_info()
        return info.decode() if isinstance(info, bytes) else str(info)
    except Exception:  # pylint: disable=broad-except
        return None


def binary_built(path):
    """Modification time of the staticlm CLI: says whether it predates the recorded commit."""
    try:
        return datetime.datetime.fromtimestamp(os.path.getmtime(path)).isoformat(
            timespec="seconds")
    except OSError:
        return None


def commit_time(repo):
    try:
        return subprocess.run(["git", "-C", repo, "log", "-1", "--format=%cI"],
                              capture_output=True, text=True, check=False,
                              timeout=30).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def describe(repo, threads):
    """One JSON-ready dict describing this machine and the software under comparison."""
    cpu, simd, uarch = _cpuinfo()
    return {
        "date": datetime.date.today().isoformat(),
        "hostname": socket.gethostname(),
        "cpu": cpu,
        "cpu_simd_flags": simd,
        "cpu_uarch": uarch,
        "cores": os.cpu_count(),
        "memory_bytes": _mem_total_bytes(),
        "os": _os_name(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "threads": threads,
        "load_average_at_start": list(os.getloadavg()),
        "versions": {p: _version(p) for p in ("llama_cpp_python", "torch", "transformers",
                                              "numpy", "gguf", "tokenizers")},
        "llama_cpp_system_info": llama_cpp_system_info(),
        "staticlm_commit": git_commit(repo),
        "staticlm_commit_time": commit_time(repo),
    }


def short_name(machine):
    """A file-name-safe label: microarchitecture (else host name) and cores, e.g.
    'sapphirerapids-2c'."""
    label = machine.get("cpu_uarch") or machine["hostname"]
    label = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-") or "machine"
    return f"{label[:24]}-{machine['cores']}c"
