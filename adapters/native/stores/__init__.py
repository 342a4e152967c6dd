"""Stores: the protocol, an in-memory store and a SQLite store."""

from .base import Store as Store
from .base import StoreCapabilities as StoreCapabilities
from .base import permission_key as permission_key
from .memory import MemoryStore as MemoryStore

__all__ = ["MemoryStore", "Store", "StoreCapabilities", "permission_key"]
