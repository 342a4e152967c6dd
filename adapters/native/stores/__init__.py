"""Stores: the protocol, an in-memory store and a SQLite store."""

from .base import Store as Store
from .base import StoreCapabilities as StoreCapabilities
from .base import permission_key as permission_key
from .memory import MemoryStore as MemoryStore
from .sqlite import SqliteStore as SqliteStore
from .sqlite import list_sessions as list_sessions
from .sqlite import resolve_inbox_item as resolve_inbox_item
