"""The exception every failing C API call raises."""

from ._capi import STATUS_NAMES


class StaticlmError(Exception):
    """A C API call failed. `status` is its staticlm_status value, `message` the C API's own
    one-line message (the error buffer of staticlm_create, or staticlm_last_error)."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = STATUS_NAMES.get(status, "unknown")
        self.message = message
        super().__init__(f"{message} ({self.status_name})")
