"""What the comparison ran on: CPU, cores, memory, OS, peer versions, staticlm commit."""

import datetime
import importlib.metadata
import os
import platform
import re
import socket
import subprocess


def _cpuinfo():
    model, flags = None, ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = value
    except OSError:
        pass
    simd = [f for f in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                        "avx_vnni", "amx_tile") if f in flags.split()]
    return model or platform.processor() or "unknown", simd


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
    """Short commit of the working tree, with '-dirty' when it has uncommitted changes."""
    def git(*args):
        return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True,
                              check=False, timeout=30).stdout.strip()
    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
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


def describe(repo, threads):
    """One JSON-ready dict describing this machine and the software under comparison."""
    cpu, simd = _cpuinfo()
    return {
        "date": datetime.date.today().isoformat(),
        "hostname": socket.gethostname(),
        "cpu": cpu,
        "cpu_simd_flags": simd,
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
    }


def short_name(machine):
    """A file-name-safe label: host name and core count, e.g. 'vm-2c'."""
    host = re.sub(r"[^a-z0-9]+", "-", machine["hostname"].lower()).strip("-") or "machine"
    return f"{host[:24]}-{machine['cores']}c"
