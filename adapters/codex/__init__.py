"""The Codex CLI runtime (``codex exec --json`` and ``codex app-server``) behind the trait.

Layers: :mod:`.dialect` (Codex's exec lines and app-server JSON-RPC, typed and tolerant),
:mod:`.normalize` (pure frames → events), :mod:`.driver` (argv, provider overrides,
environment, homes, JSON-RPC client) and :mod:`.adapter` (:class:`CodexAdapter`).
"""

from .adapter import CodexAdapter as CodexAdapter
from .adapter import CodexCodec as CodexCodec
from .adapter import CodexSession as CodexSession
from .dialect import decode_exec_line as decode_exec_line
from .dialect import decode_rpc_line as decode_rpc_line
from .driver import CodexConfig as CodexConfig
from .driver import CodexProvider as CodexProvider
from .driver import JsonRpcClient as JsonRpcClient
from .driver import ask_person as ask_person
from .normalize import AppState as AppState
from .normalize import ExecState as ExecState
from .normalize import Price as Price
from .normalize import classify_failure as classify_failure
from .normalize import normalize_app as normalize_app
from .normalize import normalize_exec as normalize_exec
