"""staticlm: a small decoder-only language model with static memory, from Python.

    import staticlm
    m = staticlm.Model("models/SmolLM2-135M-Instruct.Q4_1.gguf", ctx=2048, backend="cpu")
    for piece in m.generate("The capital of France is", max_tokens=8, temperature=0):
        print(piece, end="", flush=True)

A ctypes layer over the C API (include/staticlm/staticlm.h) of the libstaticlm.so that
`pip install ./python` builds; failing calls raise StaticlmError with the C API's message.
"""

from ._capi import lib as _lib
from .errors import StaticlmError
from .model import Model

__version__ = _lib.staticlm_version().decode()
__all__ = ["Model", "StaticlmError", "__version__"]
