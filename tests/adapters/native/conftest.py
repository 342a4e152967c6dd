"""Shared helpers for the native runtime's tests."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from pydantic import BaseModel

from adapters.native.subscriber import SubscriberEvent


@attrs.define
class Recorder:
    """A subscriber that keeps every event."""

    events: list[SubscriberEvent] = attrs.field(factory=list[SubscriberEvent])

    async def record(self, event: SubscriberEvent) -> None:
        self.events.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


class CityInput(BaseModel):
    city: str


class EchoInput(BaseModel):
    text: str = ""
    delay: float = 0.0


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()
