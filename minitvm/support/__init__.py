"""``tvm.support`` (TVM 0.27): ``support.utils`` is :mod:`minitvm.contrib.utils` (``tempdir``)."""
