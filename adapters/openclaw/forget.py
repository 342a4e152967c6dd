"""Deleting OpenClaw sessions that ringleader no longer records (``ringleader prune``).

A managed gateway keeps its sessions (their transcripts in OpenClaw's SQLite stores) in the
shared state directory ``<state dir>/openclaw`` (:attr:`GatewaySettings.shared_state_dir
<adapters.openclaw.gateway.GatewaySettings.shared_state_dir>`), and nothing but OpenClaw reads or
writes that store: :func:`delete_sessions` starts a gateway there (only there: never while
another one holds it) and deletes each session through ``sessions.delete`` (transcript
included), then stops it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import trio

from orchestrator.core.errors import RingleaderError, RuntimeReportedError

from .gateway import GatewayManager, GatewaySettings

__all__ = ["delete_sessions", "gateway_keys"]


def gateway_keys(blobs: Iterable[str]) -> set[str]:
    """The OpenClaw session keys named by recorded session blobs (the adapter's codec:
    ``{"sessionKey", "sessionId"}``, ``sessionId`` being the OpenClaw key); others are skipped."""
    keys: set[str] = set()
    for blob in blobs:
        try:
            data: Any = json.loads(blob)
        except ValueError:
            continue
        key = data.get("sessionId") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if isinstance(key, str) and key.startswith("agent:"):
            keys.add(key)
    return keys


async def delete_sessions(settings: GatewaySettings, keys: Sequence[str]) -> int:
    """Delete the sessions ``keys`` (with their transcripts) from the gateway state directory
    ``settings.shared_state_dir``; the number deleted (a key OpenClaw does not know is skipped).

    Raises:
        RuntimeStartError: another gateway holds the directory, or the gateway did not start.
        RuntimeNotFoundError: OpenClaw is not installed.
    """
    if not keys:
        await trio.lowlevel.checkpoint()
        return 0
    manager = GatewayManager(attrs.evolve(settings, shared_only=True))
    deleted = 0
    failure: RingleaderError | None = None
    async with trio.open_nursery() as nursery:
        manager.bind(nursery)
        try:
            client = await manager.ensure()
            for key in keys:
                try:
                    answer = await client.request(
                        "sessions.delete", {"key": key, "deleteTranscript": True}
                    )
                except RuntimeReportedError:
                    continue  # unknown to OpenClaw (never started, or already deleted)
                deleted += answer.get("deleted") is True
        except RingleaderError as exc:  # raised outside the nursery: not in a group
            failure = exc
        finally:
            await manager.aclose()
    if failure is not None:
        raise failure
    return deleted
