"""A small display manager (Glove's ``Displaymanager``) on trio.

Tools push *slots* for a UI: :meth:`DisplayManager.push_and_forget` shows something,
:meth:`DisplayManager.push_and_wait` blocks until the host resolves the slot. Unlike Glove, a
waiting slot is removed when its waiter is cancelled, so an abort never leaves it on the stack.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

__all__ = ["DisplayManager", "Slot", "SlotRejectedError"]


class SlotRejectedError(Exception):
    """The host rejected a ``push_and_wait`` slot."""


@attrs.define
class Slot:
    id: str
    renderer: str
    input: Any


@attrs.define
class _Waiter:
    event: trio.Event = attrs.field(factory=trio.Event)
    value: Any = None
    error: str | None = None


Listener = Callable[[list[Slot]], Awaitable[None]]


@attrs.define
class DisplayManager:
    stack: list[Slot] = attrs.field(factory=list[Slot])
    listeners: list[Listener] = attrs.field(factory=list[Listener])
    _waiters: dict[str, _Waiter] = attrs.field(factory=dict[str, _Waiter])
    _ids: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener) if listener in self.listeners else None

    async def notify(self) -> None:
        for listener in tuple(self.listeners):
            await listener(list(self.stack))

    async def push_and_forget(self, input: Any, renderer: str = "generic") -> str:
        slot = Slot(f"slot_{next(self._ids)}", renderer, input)
        self.stack.append(slot)
        await self.notify()
        return slot.id

    async def push_and_wait(self, input: Any, renderer: str = "generic") -> Any:
        slot = Slot(f"slot_{next(self._ids)}", renderer, input)
        waiter = _Waiter()
        self._waiters[slot.id] = waiter
        self.stack.append(slot)
        try:
            await self.notify()
            await waiter.event.wait()
        finally:
            self._waiters.pop(slot.id, None)
            self._remove(slot.id)
        if waiter.error is not None:
            raise SlotRejectedError(waiter.error)
        return waiter.value

    def pending(self) -> list[Slot]:
        return [s for s in self.stack if s.id in self._waiters]

    def resolve(self, slot_id: str, value: Any) -> None:
        waiter = self._waiters.get(slot_id)
        if waiter is not None:
            waiter.value = value
            waiter.event.set()

    def reject(self, slot_id: str, error: str) -> None:
        waiter = self._waiters.get(slot_id)
        if waiter is not None:
            waiter.error = error
            waiter.event.set()

    def remove_slot(self, slot_id: str) -> None:
        self._remove(slot_id)

    async def clear_stack(self) -> None:
        for waiter in self._waiters.values():
            waiter.error = "display stack cleared"
            waiter.event.set()
        self.stack.clear()
        await self.notify()

    def _remove(self, slot_id: str) -> None:
        self.stack[:] = [s for s in self.stack if s.id != slot_id]
