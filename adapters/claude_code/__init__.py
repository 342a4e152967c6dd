"""The Claude Code runtime (``claude -p`` one-shot and long-lived stream-json) behind the trait.

Layers: :mod:`.dialect` (Claude Code's stream-json lines and control protocol, typed and
tolerant, with a fast path for streamed deltas), :mod:`.normalize` (pure lines → events),
:mod:`.driver` (configuration, argv, environment, homes, control requests) and :mod:`.adapter`
(:class:`ClaudeCodeAdapter`).
"""

from .adapter import ClaudeCodeAdapter as ClaudeCodeAdapter
from .adapter import ClaudeCodeCodec as ClaudeCodeCodec
from .adapter import ClaudeCodeSession as ClaudeCodeSession
from .dialect import decode_line as decode_line
from .driver import ClaudeCodeConfig as ClaudeCodeConfig
from .driver import ControlClient as ControlClient
from .driver import Mode as Mode
from .driver import PermissionDecision as PermissionDecision
from .driver import PermissionPolicy as PermissionPolicy
from .driver import allow_all as allow_all
from .driver import ask_all as ask_all
from .driver import claude_args as claude_args
from .driver import deny_all as deny_all
from .driver import run_env as run_env
from .normalize import ClaudeState as ClaudeState
from .normalize import classify_result as classify_result
from .normalize import flush_text as flush_text
from .normalize import normalize_line as normalize_line
from .normalize import normalize_lines as normalize_lines
