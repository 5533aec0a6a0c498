"""Every store interface is implemented whole, with the same signatures, by its SQLite and PostgreSQL classes.

Neither implementation derives from the other or from the interface, so a method missing from one
cannot be inherited silently (from a sibling, or as the interface's empty body): this test names it.
Importing the PostgreSQL modules needs the driver only, no server.
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol

import pytest

from mindroom.matrix.credentials import SyncTokenStore
from mindroom.state.answers import AnswerLog
from mindroom.state.approvals import ApprovalStore
from mindroom.state.connections import ConnectionStore
from mindroom.state.crypto import CryptoVault
from mindroom.state.grants import GrantStore
from mindroom.state.journal import TurnJournal
from mindroom.state.knowledge import KnowledgeIndex
from mindroom.state.overrides import OverrideStore
from mindroom.state.postgres.answers import PostgresAnswerLog
from mindroom.state.postgres.approvals import PostgresApprovalStore
from mindroom.state.postgres.connections import PostgresConnectionStore
from mindroom.state.postgres.crypto import PostgresCryptoVault
from mindroom.state.postgres.grants import PostgresGrantStore
from mindroom.state.postgres.journal import PostgresTurnJournal
from mindroom.state.postgres.knowledge import PostgresKnowledgeIndex
from mindroom.state.postgres.overrides import PostgresOverrideStore
from mindroom.state.postgres.positions import PostgresSnapshots, PostgresSyncTokens
from mindroom.state.postgres.rooms import PostgresRoomMemory
from mindroom.state.postgres.schedules import PostgresScheduleStore
from mindroom.state.rooms import RoomMemory
from mindroom.state.schedules import ScheduleStore
from mindroom.state.snapshots import SnapshotStore
from mindroom.state.sqlite.answers import SqliteAnswerLog
from mindroom.state.sqlite.approvals import SqliteApprovalStore
from mindroom.state.sqlite.connections import SqliteConnectionStore
from mindroom.state.sqlite.crypto import SqliteCryptoVault
from mindroom.state.sqlite.grants import SqliteGrantStore
from mindroom.state.sqlite.journal import SqliteTurnJournal
from mindroom.state.sqlite.knowledge import SqliteKnowledgeIndex
from mindroom.state.sqlite.overrides import SqliteOverrideStore
from mindroom.state.sqlite.rooms import SqliteRoomMemory
from mindroom.state.sqlite.schedules import SqliteScheduleStore
from mindroom.state.sqlite.snapshots import FileSnapshots
from mindroom.state.tokens import SyncTokens

IMPLEMENTATIONS: dict[type, tuple[type, type]] = {
    TurnJournal: (SqliteTurnJournal, PostgresTurnJournal),
    AnswerLog: (SqliteAnswerLog, PostgresAnswerLog),
    ApprovalStore: (SqliteApprovalStore, PostgresApprovalStore),
    GrantStore: (SqliteGrantStore, PostgresGrantStore),
    RoomMemory: (SqliteRoomMemory, PostgresRoomMemory),
    ScheduleStore: (SqliteScheduleStore, PostgresScheduleStore),
    SnapshotStore: (FileSnapshots, PostgresSnapshots),
    SyncTokens: (SyncTokenStore, PostgresSyncTokens),
    KnowledgeIndex: (SqliteKnowledgeIndex, PostgresKnowledgeIndex),
    CryptoVault: (SqliteCryptoVault, PostgresCryptoVault),
    OverrideStore: (SqliteOverrideStore, PostgresOverrideStore),
    ConnectionStore: (SqliteConnectionStore, PostgresConnectionStore),
}


def _members(protocol: type) -> list[str]:
    """The interface's public methods and properties, as it declares them."""
    return sorted(
        name
        for name, value in vars(protocol).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    )


def _signature(owner: type, name: str) -> inspect.Signature:
    member = inspect.getattr_static(owner, name)
    if isinstance(member, property):
        assert member.fget is not None
        member = member.fget
    return inspect.signature(member, eval_str=True)  # annotations as objects: `Optional[str]` == `str | None`


def conformance_problems(protocol: type, implementation: type) -> list[str]:
    """What `implementation` lacks or declares differently from `protocol` (empty when it conforms)."""
    problems = []
    if protocol in implementation.__mro__:
        problems.append(f"{implementation.__name__} derives from {protocol.__name__} (a missing method is its stub)")
    for name in _members(protocol):
        if not hasattr(implementation, name):
            problems.append(f"{implementation.__name__}.{name} is missing")
            continue
        wanted, found = _signature(protocol, name), _signature(implementation, name)
        if wanted != found:
            problems.append(f"{implementation.__name__}.{name}{found} differs from {protocol.__name__}.{name}{wanted}")
    return problems


@pytest.mark.parametrize(
    ("protocol", "implementation"),
    [(protocol, impl) for protocol, impls in IMPLEMENTATIONS.items() for impl in impls],
    ids=lambda value: value.__name__,
)
def test_protocols_implementation_has_every_member_with_the_same_signature(protocol: type, implementation: type):
    assert _members(protocol), f"{protocol.__name__} declares no methods"

    assert conformance_problems(protocol, implementation) == []


@pytest.mark.parametrize("protocol", list(IMPLEMENTATIONS), ids=lambda value: value.__name__)
def test_protocols_the_two_implementations_are_siblings(protocol: type):
    first, second = IMPLEMENTATIONS[protocol]

    assert first not in second.__mro__ and second not in first.__mro__
    assert getattr(protocol, "_is_protocol", False), f"{protocol.__name__} is not a typing.Protocol"


class _Store(Protocol):
    def get(self, key: str, default: str | None = None) -> str | None: ...

    def close(self) -> None: ...


class _Missing:
    def get(self, key: str, default: str | None = None) -> str | None:
        return default


class _Different:
    def get(self, key: str, default: Any = None) -> str | None:
        return default

    def close(self) -> None:
        return None


class _Inheriting(_Store):
    def get(self, key: str, default: str | None = None) -> str | None:
        return default


def test_protocols_checker_names_a_missing_method_a_different_signature_and_an_inherited_stub():
    assert conformance_problems(_Store, _Missing) == ["_Missing.close is missing"]
    assert [problem.split("(")[0] for problem in conformance_problems(_Store, _Different)] == ["_Different.get"]
    assert conformance_problems(_Store, _Inheriting)[0].startswith("_Inheriting derives from _Store")
