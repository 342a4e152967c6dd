"""Accounts and fallbacks: several accounts per runtime, and tasks that move on when one is held
at its limit.

* An account is ``[runtimes.<id>.accounts.<name>]`` (:class:`~orchestrator.core.config.AccountConfig`):
  its own home (the runtime's config directory, which holds its login) and key variable. In a
  registry it is the runtime id ``<id>@<name>`` (:func:`account_key`;
  :func:`register_accounts` adds one factory per account), so its breaker is its own too.
* A task names where it may run, in order (:func:`targets`): its runtime (and ``account``), then
  its ``fallback`` entries — ``NAME`` (another account of the same runtime, when the runtime
  has one by that name), ``RUNTIME`` or ``RUNTIME@NAME``.
* The runner moves on from a target when it is held (what exists decides): its breaker is
  open, the quota meters say one of its windows is held until a reset still ahead
  (:meth:`~orchestrator.core.quota.QuotaBook.limited_until`), or its run is rate-limited with a
  reset time, which would park it: with a target left the run ends ``rate_limit_parked``
  (``Supervisor.stop``) instead of waiting, and the task continues on the next target from
  the start. The last target parks and waits as any task does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from orchestrator.core.config import AccountConfig, Config
from orchestrator.core.errors import ConfigError
from orchestrator.core.registry import RuntimeRegistry, RuntimeSpec

__all__ = [
    "HANDED_OFF",
    "MOVE_ON",
    "account_key",
    "account_table",
    "check_targets",
    "parse_target",
    "register_accounts",
    "split_key",
    "targets",
]

HANDED_OFF: Final = "rate_limit_parked"
"""The ``error.code`` of a run that ended at its account's limit so that the task could move on
to its next target (not the runtime's fault: breakers leave it alone)."""
MOVE_ON: Final = frozenset({HANDED_OFF, "breaker_open"})
"""Outcomes after which a task with a target left moves on."""


def account_key(runtime_id: str, account: str | None) -> str:
    """``claude-code@work`` (the runtime id itself without an account)."""
    return f"{runtime_id}@{account}" if account else runtime_id


def split_key(key: str) -> tuple[str, str | None]:
    runtime_id, _, account = key.partition("@")
    return runtime_id, account or None


def account_table(config: Config) -> dict[str, AccountConfig]:
    """Every configured account by :func:`account_key`."""
    return {
        account_key(runtime_id, name): account
        for runtime_id, runtime in config.runtimes.items()
        for name, account in runtime.accounts.items()
    }


def register_accounts(
    registry: RuntimeRegistry, specs: Iterable[RuntimeSpec], config: Config
) -> None:
    """Add a factory per configured account (``<id>@<name>``): the runtime built with the
    account's settings (:meth:`~orchestrator.core.config.RuntimeConfig.for_account`)."""
    by_id = {spec.id: spec for spec in specs}
    for runtime_id, runtime in config.runtimes.items():
        spec = by_id.get(runtime_id)
        if spec is None:
            continue
        for name in runtime.accounts:
            account_config = runtime.for_account(name)
            registry.register_factory(
                account_key(runtime_id, name),
                lambda spec=spec, cfg=account_config: spec.factory(cfg),
            )


def parse_target(
    entry: str, runtime_id: str, accounts: Mapping[str, AccountConfig]
) -> tuple[str, str | None]:
    """One ``fallback`` entry as ``(runtime, account)``: ``RUNTIME@NAME``, else an account of
    ``runtime_id`` named ``entry``, else the runtime ``entry``."""
    if "@" in entry:
        return split_key(entry)
    if account_key(runtime_id, entry) in accounts:
        return runtime_id, entry
    return entry, None


def targets(
    runtime_id: str,
    account: str | None,
    fallback: Sequence[str],
    accounts: Mapping[str, AccountConfig],
) -> list[tuple[str, str | None]]:
    """Where a task may run, in order, without repeats."""
    found = [(runtime_id, account)]
    for entry in fallback:
        target = parse_target(entry, runtime_id, accounts)
        if target not in found:
            found.append(target)
    return found


def check_targets(
    found: Sequence[tuple[str, str | None]],
    registry: RuntimeRegistry,
    *,
    where: str,
) -> None:
    """Refuse, before anything starts, a target whose runtime or account is unknown.

    Raises:
        ConfigError: naming the target and what is known.
    """
    known = set(registry.ids())
    for runtime_id, account in found:
        if runtime_id not in known:
            raise ConfigError(
                f"{where}: unknown runtime {runtime_id!r}; known: "
                f"{', '.join(sorted(r for r in known if '@' not in r))}"
            )
        if account is not None and account_key(runtime_id, account) not in known:
            have = sorted(k.split("@", 1)[1] for k in known if k.startswith(f"{runtime_id}@"))
            raise ConfigError(
                f"{where}: {runtime_id} has no account {account!r} (configured: "
                f"{', '.join(have) or 'none'}; add [runtimes.{runtime_id}.accounts.{account}])"
            )
