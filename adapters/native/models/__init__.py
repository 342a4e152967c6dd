"""Model adapters: the protocol, the scripted test model, and the provider adapters."""

from .base import ModelAdapter as ModelAdapter
from .base import ModelError as ModelError
from .base import ModelResponse as ModelResponse
from .base import PromptRequest as PromptRequest
from .scripted import Delta as Delta
from .scripted import Emit as Emit
from .scripted import Fail as Fail
from .scripted import Reply as Reply
from .scripted import ScriptedModel as ScriptedModel
from .scripted import Sleep as Sleep
from .scripted import Usage as Usage
