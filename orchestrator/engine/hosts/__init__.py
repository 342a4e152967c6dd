"""Where runs live. ``LocalHost`` runs tasks side by side in one trio nursery; ``RayHost`` runs
the same tasks on the nodes of a Ray cluster (optional extra ``ringleader[ray]``)."""

from typing import TypeAlias as _TypeAlias

from orchestrator.engine.hosts.local import LocalHost as LocalHost
from orchestrator.engine.hosts.local import TaskRef as TaskRef
from orchestrator.engine.hosts.ray import RayHost as RayHost
from orchestrator.engine.hosts.ray import RayTaskRef as RayTaskRef
from orchestrator.engine.hosts.ray import ray_nodes as ray_nodes

Host: _TypeAlias = LocalHost | RayHost
"""Either host: ``submit``, ``tasks``, and refs with ``outcome`` and ``abort``."""
