"""ringleader's reusable adapter contract suite and test kit.

Adapter authors subclass :class:`AdapterContract` (and, for child-process adapters,
:class:`ProcessFaultContract`) and provide a harness; see README "Writing an adapter". This
package imports pytest and hypothesis: application code never imports it.
"""

from .harness import AdapterTestHarness as AdapterTestHarness
from .harness import ChildProcessHarness as ChildProcessHarness
from .harness import ContractFrames as ContractFrames
from .harness import ProcessFaultHarness as ProcessFaultHarness
from .harness import RecordedCall as RecordedCall
from .invariants import ContractViolation as ContractViolation
from .invariants import check_stream as check_stream
from .scripted_harness import ScriptedFrames as ScriptedFrames
from .scripted_harness import ScriptedHarness as ScriptedHarness
from .suite import AdapterContract as AdapterContract
from .suite import ProcessFaultContract as ProcessFaultContract
from .suite import collect_run as collect_run

__all__ = [
    "AdapterContract",
    "AdapterTestHarness",
    "ChildProcessHarness",
    "ContractFrames",
    "ContractViolation",
    "ProcessFaultContract",
    "ProcessFaultHarness",
    "RecordedCall",
    "ScriptedFrames",
    "ScriptedHarness",
    "check_stream",
    "collect_run",
]
