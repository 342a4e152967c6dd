"""Cache-tier prompt assembly: stable → context → volatile, with UTF-8 cache breakpoints."""

from ._assemble import SEPARATOR as SEPARATOR
from ._assemble import AssembledPrompt as AssembledPrompt
from ._assemble import CacheBreakpoint as CacheBreakpoint
from ._assemble import PromptTiers as PromptTiers
from ._assemble import assemble_tiers as assemble_tiers
from ._assemble import date_stamp as date_stamp
from ._assemble import sort_tool_defs as sort_tool_defs
from ._assemble import utf8_len as utf8_len
