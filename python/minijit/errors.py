"""minijit's errors as Python exceptions: one class per C++ error (ir/Error.h)."""


class Error(Exception):
    """Base of every error minijit raises; the message is minijit's own."""


class ParseError(Error):
    """Text that does not parse: "FILE:LINE:COL: error: MSG" (``line``, ``column``)."""

    def __init__(self, message, line=0, column=0):
        super().__init__(message)
        self.line = line
        self.column = column


class GraphError(Error):
    """A graph that is not valid, or inputs of the wrong dtype, shape or device."""


class CompileError(Error):
    """The code generator or NVRTC rejected a kernel."""


class CudaError(Error):
    """The CUDA driver failed or is missing ("no CUDA driver found ...")."""


class InvalidArgumentError(Error, ValueError):
    """A bad argument to the C API: an unknown op or stage, an index out of range."""
