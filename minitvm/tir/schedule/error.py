"""ScheduleError: a primitive's precondition failed; the message says which and why."""


from ...error import TVMError


class ScheduleError(TVMError, ValueError):
    """Raised by a schedule primitive whose preconditions do not hold.

    The schedule is left exactly as it was before the call.
    """
