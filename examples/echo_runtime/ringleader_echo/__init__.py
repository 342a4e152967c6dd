"""An example third-party runtime for ringleader: ``echo``, a tiny agent CLI
(:mod:`ringleader_echo.agent`) driven as a child process by :class:`EchoAdapter`."""

from ringleader_echo.adapter import EchoAdapter as EchoAdapter
from ringleader_echo.adapter import EchoConfig as EchoConfig
from ringleader_echo.adapter import EchoDialect as EchoDialect
from ringleader_echo.spec import SPEC as SPEC
