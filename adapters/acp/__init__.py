"""The Agent Client Protocol (ACP) client adapter: any ACP agent (Hermes, Gemini CLI, OpenCode, …)
behind the trait, one agent process per run. ``dialect`` (ACP's wire shapes), ``normalize``
(updates → events, pure), ``driver`` (configuration and the agent's requests), ``adapter`` (on
the shared child-process run loop, :mod:`adapters._cli`).
"""

from .adapter import AcpAdapter as AcpAdapter
from .adapter import AcpDialect as AcpDialect
from .adapter import AcpRun as AcpRun
from .driver import AcpConfig as AcpConfig
from .driver import PermissionPolicy as PermissionPolicy
from .normalize import AcpState as AcpState
from .normalize import normalize_prompt_end as normalize_prompt_end
from .normalize import normalize_update as normalize_update
