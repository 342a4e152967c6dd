"""Hermes Agent behind the trait: the ACP adapter (``hermes acp``) with a per-identity
``HERMES_HOME``, a generated ``config.yaml`` and honest failure reporting."""

from .adapter import HermesAdapter as HermesAdapter
from .adapter import HermesConfig as HermesConfig
from .adapter import hermes_config_yaml as hermes_config_yaml
