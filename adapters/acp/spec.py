"""Where the entry points of an install made before ``adapters/acp_spec.py`` point (re-run
``scripts/setup`` or ``pip install -e .`` to use the new one, which imports no adapter while
the runtimes are listed); the spec itself is :mod:`adapters.acp_spec`."""

from adapters.acp_spec import ACP as ACP
from adapters.acp_spec import ACP_CLAUDE as ACP_CLAUDE
from adapters.acp_spec import ACP_CODEX as ACP_CODEX
from adapters.acp_spec import ACP_GEMINI as ACP_GEMINI
from adapters.acp_spec import ACP_OPENCODE as ACP_OPENCODE
from adapters.acp_spec import ACP_QWEN as ACP_QWEN

__all__ = ["ACP", "ACP_CLAUDE", "ACP_CODEX", "ACP_GEMINI", "ACP_OPENCODE", "ACP_QWEN"]
