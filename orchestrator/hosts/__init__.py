"""Where runs live. ``LocalHost`` runs tasks side by side in one trio nursery."""

from .local import LocalHost as LocalHost
from .local import TaskRef as TaskRef

__all__ = ["LocalHost", "TaskRef"]
