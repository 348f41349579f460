"""ScheduleError: a primitive's precondition failed; the message says which and why."""


from ...error import TVMError


class ScheduleError(TVMError, ValueError):
    """Raised by a schedule primitive whose preconditions do not hold.

    The schedule is left exactly as it was before the call.  ``fast`` is the short form
    ``Schedule(error_render_level="fast")`` shows (the full message when not given).
    """

    def __init__(self, message: str = "", fast: str | None = None):
        super().__init__(message)
        self.fast = fast

    def rendered(self, level: str) -> "ScheduleError":
        """This error as TVM renders it at ``error_render_level`` (detail / fast / none)."""
        if level == "none":
            return ScheduleError("ScheduleError: (not rendered)")
        if level == "fast":
            return ScheduleError(self.fast or str(self), self.fast)
        return self
