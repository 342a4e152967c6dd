"""ringleader: run heterogeneous coding agents side by side.

The package is in layers, each a sub-package; each layer imports only the layers below it
(``tests/test_layers.py`` enforces it, ``docs/architecture.md`` walks through it):

* :mod:`orchestrator.core` — what an adapter may import: the adapter trait, events, errors,
  queues, the idle guard, redaction, process lifetime, integration plans, the approval book,
  the registry and configuration.
* :mod:`orchestrator.engine` — what runs tasks: actors, supervision, the runner, rotation,
  workspaces, the event log and its feed, governance and hosts.
* the surfaces a person uses: :mod:`orchestrator.board`, :mod:`orchestrator.acp`, :mod:`orchestrator.mcp`,
  :mod:`orchestrator.cli` and the scripted model server :mod:`orchestrator.model_server`.

Import names from the layer that defines them (``from orchestrator.engine import LocalHost``);
this package itself exports nothing, so ``import orchestrator.cli.main`` stays cheap.
"""

__version__ = "0.1.0"
"""The version of the ``ringleader`` distribution (``pyproject.toml`` reads it from here)."""
