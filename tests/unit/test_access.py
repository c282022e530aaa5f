"""Who may touch which layer (SPEC §2.3, §3.1, §10), as agentmem.domain.access decides it."""

from __future__ import annotations

import pytest
from agentmem.domain.access import (
    AgentWrite,
    acting_user,
    can_see_memory,
    check_layer_write,
    check_read_only,
    check_requested_visibility,
    entry_layer,
    layer_visibility,
    require_account_key,
    visible_layers,
)
from agentmem.domain.errors import ForbiddenError, InvalidError, NotFoundError
from agentmem.domain.models import Entry, Layer, MemoryRecord, Principal, Visibility

ACCOUNT = Principal(account_id="acct_1", key_id="key_a", kind="account")
ANA = Principal(account_id="acct_1", key_id="key_ana", kind="user", user_id="ana")
COMPANY = MemoryRecord(account_id="acct_1", name="company", user_id=None, created_at="2026-03-01T00:00:00Z")
ANA_DIARY = MemoryRecord(account_id="acct_1", name="ana-diary", user_id="ana", created_at="2026-03-01T00:00:00Z")


# -- acting_user ------------------------------------------------------------------------------------------


def test_an_account_key_acts_for_the_account_or_for_any_user_it_names() -> None:
    # Given / When / Then
    assert acting_user(ACCOUNT, None) is None
    assert acting_user(ACCOUNT, "ana") == "ana"
    assert acting_user(ACCOUNT, "bob") == "bob"


def test_a_user_key_implies_its_user() -> None:
    # Given / When / Then: with or without user=, the same user
    assert acting_user(ANA, None) == "ana"
    assert acting_user(ANA, "ana") == "ana"


def test_a_user_key_cannot_act_for_another_user() -> None:
    # Given / When / Then
    with pytest.raises(ForbiddenError) as forbidden:
        acting_user(ANA, "bob")
    assert forbidden.value.status == 403


@pytest.mark.parametrize("principal", [ACCOUNT, ANA])
def test_a_malformed_user_id_is_refused_naming_user(principal: Principal) -> None:
    # Given / When / Then
    with pytest.raises(InvalidError) as invalid:
        acting_user(principal, "not a user id")
    assert invalid.value.details["field"] == "user"


# -- require_account_key ----------------------------------------------------------------------------------


def test_account_only_operations_refuse_user_keys() -> None:
    # Given / When / Then
    require_account_key(ACCOUNT, "managing keys")
    with pytest.raises(ForbiddenError) as forbidden:
        require_account_key(ANA, "managing keys")
    assert "managing keys" in forbidden.value.message


# -- which memories a caller sees -------------------------------------------------------------------------


def test_everyone_in_the_account_sees_the_accounts_memories() -> None:
    # Given / When / Then
    assert can_see_memory(COMPANY, None, ACCOUNT)
    assert can_see_memory(COMPANY, "ana", ACCOUNT)
    assert can_see_memory(COMPANY, "ana", ANA)


def test_a_users_memory_is_seen_by_that_user_and_the_account_key_only() -> None:
    # Given / When / Then
    assert can_see_memory(ANA_DIARY, "ana", ANA)
    assert can_see_memory(ANA_DIARY, "ana", ACCOUNT)
    assert can_see_memory(ANA_DIARY, None, ACCOUNT)
    assert not can_see_memory(ANA_DIARY, "bob", ACCOUNT)
    bob = Principal(account_id="acct_1", key_id="key_bob", kind="user", user_id="bob")
    assert not can_see_memory(ANA_DIARY, "bob", bob)


# -- the one layer a call acts on -------------------------------------------------------------------------


def test_an_account_memory_has_the_account_layer_and_one_layer_per_user() -> None:
    # Given / When / Then
    assert entry_layer(COMPANY, None, ACCOUNT) == Layer("acct_1", "company", None)
    assert entry_layer(COMPANY, "ana", ACCOUNT) == Layer("acct_1", "company", "ana")
    assert entry_layer(COMPANY, "ana", ANA) == Layer("acct_1", "company", "ana")


def test_a_users_memory_has_only_its_users_layer() -> None:
    # Given / When / Then: even the account key without user= lands in the owner's layer
    assert entry_layer(ANA_DIARY, None, ACCOUNT) == Layer("acct_1", "ana-diary", "ana")
    assert entry_layer(ANA_DIARY, "ana", ANA) == Layer("acct_1", "ana-diary", "ana")


def test_another_users_memory_is_not_found_rather_than_forbidden() -> None:
    # Given / When / Then
    with pytest.raises(NotFoundError):
        entry_layer(ANA_DIARY, "bob", ACCOUNT)


def test_layer_user_key_stores_the_account_layer_as_an_empty_string() -> None:
    # Given / When / Then: the account layer and a user's never share a key
    assert Layer("acct_1", "company", None).user_key == ""
    assert Layer("acct_1", "company", "ana").user_key == "ana"


# -- the layers a search sees -----------------------------------------------------------------------------


def test_a_user_searching_an_account_memory_sees_their_layer_first_then_the_accounts() -> None:
    # Given / When / Then
    assert visible_layers(COMPANY, "ana", ANA) == [
        Layer("acct_1", "company", "ana"),
        Layer("acct_1", "company", None),
    ]


def test_the_account_searching_alone_sees_the_account_layer() -> None:
    # Given / When / Then
    assert visible_layers(COMPANY, None, ACCOUNT) == [Layer("acct_1", "company", None)]


def test_a_users_memory_shows_one_layer_to_a_search() -> None:
    # Given / When / Then
    assert visible_layers(ANA_DIARY, "ana", ANA) == [Layer("acct_1", "ana-diary", "ana")]
    with pytest.raises(NotFoundError):
        visible_layers(ANA_DIARY, "bob", ACCOUNT)


# -- visibility must agree with the layer -----------------------------------------------------------------


def test_the_account_layer_holds_shared_or_read_only_entries() -> None:
    # Given the account layer
    layer = Layer("acct_1", "company", None)

    # When / Then
    assert layer_visibility(layer, None) == "shared"
    assert layer_visibility(layer, "shared") == "shared"
    assert layer_visibility(layer, "read_only") == "read_only"
    with pytest.raises(InvalidError) as invalid:
        layer_visibility(layer, "private")
    assert invalid.value.details["field"] == "visibility"


@pytest.mark.parametrize("requested", ["shared", "read_only"])
def test_a_user_layer_holds_private_entries_only(requested: str) -> None:
    # Given ana's layer
    layer = Layer("acct_1", "company", "ana")

    # When / Then
    assert layer_visibility(layer, None) == "private"
    assert layer_visibility(layer, "private") == "private"
    with pytest.raises(InvalidError) as invalid:
        layer_visibility(layer, requested)  # type: ignore[arg-type]
    assert invalid.value.details["field"] == "visibility"


# --- check_layer_write: who may change which layer (SPEC §2.3, §10) ----------------------------------

_ACCOUNT_KEY = Principal("a1", "k1", "account")
_ANA_KEY = Principal("a1", "k2", "user", "ana")
_ACCOUNT_LAYER = Layer("a1", "company", None)
_ANA_LAYER = Layer("a1", "company", "ana")
_BOB_LAYER = Layer("a1", "company", "bob")


@pytest.mark.parametrize("operation", ["save", "delete"])
@pytest.mark.parametrize("agent", [None, AgentWrite(None), AgentWrite("ana"), AgentWrite("ana", write_shared=True)])
def test_a_user_key_never_changes_the_account_layer_or_another_users(operation: str, agent: AgentWrite | None) -> None:
    for layer in (_ACCOUNT_LAYER, _BOB_LAYER):
        with pytest.raises(ForbiddenError):
            check_layer_write(_ANA_KEY, layer, operation, agent=agent)  # type: ignore[arg-type]
    check_layer_write(_ANA_KEY, _ANA_LAYER, operation, agent=agent)  # type: ignore[arg-type]


@pytest.mark.parametrize("write_shared", [False, True])
def test_an_agent_in_a_users_conversation_never_deletes_an_account_entry(write_shared: bool) -> None:
    with pytest.raises(ForbiddenError) as caught:
        check_layer_write(_ACCOUNT_KEY, _ACCOUNT_LAYER, "delete", agent=AgentWrite("ana", write_shared))
    assert caught.value.details["reason"] == "account_entry"


def test_an_agent_in_a_users_conversation_saves_shared_only_when_set_to() -> None:
    with pytest.raises(ForbiddenError):
        check_layer_write(_ACCOUNT_KEY, _ACCOUNT_LAYER, "save", agent=AgentWrite("ana"))
    check_layer_write(_ACCOUNT_KEY, _ACCOUNT_LAYER, "save", agent=AgentWrite("ana", write_shared=True))
    with pytest.raises(ForbiddenError):
        check_layer_write(_ACCOUNT_KEY, _BOB_LAYER, "save", agent=AgentWrite("ana", write_shared=True))


@pytest.mark.parametrize("operation", ["save", "delete"])
def test_the_api_and_an_agent_with_the_account_change_the_account_layer(operation: str) -> None:
    check_layer_write(_ACCOUNT_KEY, _ACCOUNT_LAYER, operation)  # type: ignore[arg-type]
    check_layer_write(_ACCOUNT_KEY, _ACCOUNT_LAYER, operation, agent=AgentWrite(None))  # type: ignore[arg-type]
    check_layer_write(_ACCOUNT_KEY, _BOB_LAYER, operation)  # type: ignore[arg-type]


@pytest.mark.parametrize("visibility", ["shared", "read_only"])
def test_a_user_key_asking_for_the_account_layer_is_refused_and_an_account_key_is_not(visibility: str) -> None:
    with pytest.raises(ForbiddenError) as caught:
        check_requested_visibility(_ANA_KEY, visibility)  # type: ignore[arg-type]
    assert caught.value.details["reason"] == "account_layer"
    check_requested_visibility(_ACCOUNT_KEY, visibility)  # type: ignore[arg-type]
    check_requested_visibility(_ANA_KEY, "private")
    check_requested_visibility(_ANA_KEY, None)


# -- check_read_only -----------------------------------------------------------------------------------------


def _entry(visibility: Visibility, user: str | None = None) -> Entry:
    return Entry(name="rules", description="House rules", content="Be kind.", category="note", importance=0.5,
                 visibility=visibility, version=1, updated_by="api", created_at="2026-03-01T00:00:00Z",
                 updated_at="2026-03-01T00:00:00Z", memory="company", user_id=user)


ANAS_LAYER = Layer("acct_1", "company", "ana")
ACCOUNT_LAYER = Layer("acct_1", "company", None)


@pytest.mark.parametrize("agent", [False, True])
def test_no_one_makes_a_users_copy_of_a_read_only_entry(agent: bool) -> None:
    # Given a read_only account entry that ana's layer does not hold
    # When a save of its name lands in ana's layer, by the API or an agent
    with pytest.raises(ForbiddenError) as refused:
        check_read_only(ANAS_LAYER, "rules", own=None, shared=_entry("read_only"), agent=agent)
    # Then it is refused, with the reason the tools give
    assert refused.value.details["reason"] == "read_only"


def test_a_users_entry_from_before_stays_theirs_and_a_shared_entry_is_copied() -> None:
    # Given / When / Then: ana's existing entry of the name is hers to change; a shared entry is copied
    check_read_only(ANAS_LAYER, "rules", own=_entry("private", "ana"), shared=_entry("read_only"), agent=True)
    check_read_only(ANAS_LAYER, "rules", own=None, shared=_entry("shared"), agent=False)
    check_read_only(ANAS_LAYER, "rules", own=None, shared=None, agent=True)


def test_only_the_api_changes_a_read_only_entry_in_the_account_layer() -> None:
    # Given a read_only account entry
    # When the API changes it, it may; when an agent does, it is refused
    check_read_only(ACCOUNT_LAYER, "rules", own=_entry("read_only"), shared=_entry("read_only"), agent=False)
    with pytest.raises(ForbiddenError):
        check_read_only(ACCOUNT_LAYER, "rules", own=_entry("read_only"), shared=_entry("read_only"), agent=True)
