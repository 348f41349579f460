"""Image operators (TVM's ``relax.op.image``): ``resize2d``."""

from .resize import resize2d

__all__ = ["resize2d"]
