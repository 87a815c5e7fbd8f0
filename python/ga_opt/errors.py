"""The exception of the ga_opt package."""


class GaOptError(RuntimeError):
    """A step that ga-opt cannot compile or run as asked: the importer's,
    the compiler's or the step's own message, with its location where it
    has one (`location`: 'file:line', or None)."""

    def __init__(self, message, location=None):
        super().__init__(message)
        self.location = location
