"""The console's trash (Debian's Chromium through Playwright, as in ``test_console.py``): a memory or an agent
deleted from its page is in the Trash with when it went and when it will be purged, and Restore brings it
back to its list; an agent is deleted for good after a confirmation that names what goes; the API's
refusals (a memory still attached, a restore that no longer applies, a user key restoring the account's)
show where the person is looking."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from test_console import Console, accessible, browser, console, page, sign_in  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


def a_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def open_trash(page: Any) -> None:  # noqa: F811
    page.get_by_role("link", name="Trash", exact=True).click()
    page.get_by_role("heading", name="Trash", exact=True).wait_for()


def trash_row(page: Any, table: str, name: str) -> Any:  # noqa: F811
    return page.get_by_role("table", name=table).locator("tr.item").filter(has_text=name)


def tab_to(page: Any, name: str) -> None:  # noqa: F811
    """Press Tab until the control named ``name`` (its text, or its aria-label) has the focus."""
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("() => { const el = document.activeElement;"
                         " return el.getAttribute('aria-label') || el.textContent.trim(); }") == name:
            return
    raise AssertionError(f"no control named {name!r} is reachable with Tab")


def test_a_memory_deleted_in_the_console_is_in_the_trash_and_restore_brings_it_back(
    page: Any, console: Console, browser: Any  # noqa: F811
) -> None:
    memory = a_name("kb")
    assert console.api("PUT", f"/v1/memories/{memory}").status_code == 201
    assert console.api("PUT", f"/v1/memories/{memory}/entries/refunds",
                       json={"content": "Refund within 30 days.", "description": "Refunds"}).status_code == 201
    sign_in(page, console)
    page.get_by_role("link", name=memory, exact=True).click()
    page.get_by_role("heading", name=f"Memory {memory}").wait_for()
    # When it is deleted: asked first, then moved to the trash, which opens
    page.get_by_role("button", name="Delete memory…").click()
    dialog = page.get_by_role("alertdialog")
    assert f"Move memory {memory} to the trash" in dialog.inner_text()
    page.get_by_role("button", name=f"Move {memory} to the trash").click()
    page.get_by_role("heading", name="Trash", exact=True).wait_for()
    # Then it is listed there, with when it went and when it will be purged
    row = trash_row(page, "Memories in the trash", memory)
    cells = row.locator("td").all_inner_texts()
    assert cells[:3] == [memory, "account", "1"]
    assert cells[3].endswith(" UTC") and "(in 30 days)" in cells[4]
    assert console.api("GET", f"/v1/memories/{memory}").status_code == 404
    accessible(page, browser)
    page.get_by_role("link", name="Memories", exact=True).click()
    page.get_by_role("heading", name="Memories", exact=True).wait_for()
    assert page.get_by_role("link", name=memory, exact=True).count() == 0
    # When it is restored
    open_trash(page)
    page.get_by_role("button", name=f"Restore memory {memory}").click()
    page.get_by_text(f"Restored memory {memory}").wait_for()
    # Then it leaves the trash and is back in its list, with its entry
    assert trash_row(page, "Memories in the trash", memory).count() == 0
    page.get_by_role("link", name="Memories", exact=True).click()
    page.get_by_role("link", name=memory, exact=True).click()
    page.get_by_role("link", name="refunds", exact=True).wait_for()


def test_a_memory_an_agent_attaches_is_not_deleted_and_the_agents_are_named(
    page: Any, console: Console  # noqa: F811
) -> None:
    memory, agent, gone = a_name("kb"), a_name("bot"), a_name("old-bot")
    assert console.api("PUT", f"/v1/memories/{memory}").status_code == 201
    for name in (agent, gone):
        assert console.api("PUT", f"/v1/agents/{name}", json={"memories": [{"name": memory}]}).status_code == 201
    assert console.api("DELETE", f"/v1/agents/{gone}").status_code == 200  # in the trash, still attaching it
    sign_in(page, console)
    page.goto(console.base_url + f"/console#/memories/{memory}")
    page.get_by_role("button", name="Delete memory…").click()
    page.get_by_role("button", name=f"Move {memory} to the trash").click()
    # Then the API's 409 shows in the dialog, with each agent that attaches it and where to detach it
    refusal = page.get_by_role("alertdialog").get_by_role("alert")
    refusal.get_by_text("detach it from them first").wait_for()
    text = refusal.inner_text()
    assert f"memory '{memory}' is attached to" in text
    assert f"{gone} (account) is in the trash" in text
    assert console.api("GET", f"/v1/memories/{memory}").status_code == 200
    refusal.get_by_role("link", name=agent, exact=True).click()
    page.get_by_role("heading", name=f"Agent {agent}").wait_for()
    # And an agent whose own memory another agent attaches is kept out of the trash the same way
    reader = a_name("reader")
    attaching = {"memories": [{"name": f"agent:{agent}"}]}
    assert console.api("PUT", f"/v1/agents/{reader}", json=attaching).status_code == 201
    page.reload()
    page.get_by_role("button", name="Delete agent…").click()
    page.get_by_role("button", name=f"Move {agent} to the trash").click()
    refusal = page.get_by_role("alertdialog").get_by_role("alert")
    refusal.get_by_text(f"{reader} (account): detach it on the agent's page").wait_for()
    assert f"own memory 'agent:{agent}' is attached to {reader}" in refusal.inner_text()
    assert console.api("GET", f"/v1/agents/{agent}").status_code == 200


def test_an_agent_deleted_in_the_console_is_restored_then_deleted_for_good(
    page: Any, console: Console, browser: Any  # noqa: F811
) -> None:
    agent, user = a_name("bot"), a_name("user")
    assert console.api("PUT", f"/v1/agents/{agent}", params={"user": user},
                       json={"instructions": "Answer billing questions."}).status_code == 201
    own = f"agent:{agent}"
    assert console.api("PUT", f"/v1/memories/{own}/entries/tone", params={"user": user},
                       json={"content": "Be brief.", "description": "Tone"}).status_code == 201
    sign_in(page, console)
    page.get_by_role("link", name="Agents", exact=True).click()
    page.get_by_role("link", name=agent, exact=True).click()
    page.get_by_role("heading", name=f"Agent {agent}").wait_for()
    # When it is deleted from its page
    page.get_by_role("button", name="Delete agent…").click()
    page.get_by_role("button", name=f"Move {agent} to the trash").click()
    page.get_by_role("heading", name="Trash", exact=True).wait_for()
    # Then it is in the trash, its user's, with its own memory on its row (not a memory to restore alone)
    cells = trash_row(page, "Agents in the trash", agent).locator("td").all_inner_texts()
    assert cells[:2] == [agent, f"user {user}"] and "(in 30 days)" in cells[3]
    assert trash_row(page, "Memories in the trash", own).count() == 0
    # When it is restored: back in the agents' list, and its own memory with it
    page.get_by_role("button", name=f"Restore agent {agent}").click()
    page.get_by_text(f"Restored agent {agent}").wait_for()
    assert trash_row(page, "Agents in the trash", agent).count() == 0
    page.get_by_role("link", name="Agents", exact=True).click()
    page.get_by_role("link", name=agent, exact=True).wait_for()
    assert console.api("GET", f"/v1/memories/{own}/entries/tone", params={"user": user}).status_code == 200
    # When it goes to the trash again and is deleted for good: the confirmation names what goes
    assert console.api("DELETE", f"/v1/agents/{agent}", params={"user": user}).status_code == 200
    open_trash(page)
    page.get_by_role("button", name=f"Delete for good… (agent {agent})").click()
    dialog = page.get_by_role("alertdialog")
    said = dialog.inner_text()
    assert f"Delete agent {agent} for good? This cannot be undone." in said
    assert f"its own memory {own}, 1 entry" in said and "journals, checkpoints and workspace files" in said
    accessible(page, browser)
    # (and Keep it leaves it there)
    dialog.get_by_role("button", name="Keep it").click()
    assert page.get_by_role("alertdialog").count() == 0
    page.get_by_role("button", name=f"Delete for good… (agent {agent})").click()
    page.get_by_role("button", name=f"Delete {agent} for good").click()
    page.get_by_text(f"Deleted agent {agent} for good: agents 1, memories 1, entries 1").wait_for()
    assert trash_row(page, "Agents in the trash", agent).count() == 0
    assert console.api("GET", f"/v1/agents/{agent}", params={"user": user}).status_code == 404
    trashed = console.api("GET", "/v1/agents", params={"trash": "true"}).json()["items"]
    assert agent not in [a["name"] for a in trashed]


def test_a_refused_restore_shows_the_apis_message_on_its_row(page: Any, console: Console) -> None:  # noqa: F811
    memory, agent = a_name("kb"), a_name("bot")
    assert console.api("PUT", f"/v1/memories/{memory}").status_code == 201
    assert console.api("PUT", f"/v1/agents/{agent}", json={}).status_code == 201
    assert console.api("DELETE", f"/v1/memories/{memory}").status_code == 200
    assert console.api("DELETE", f"/v1/agents/{agent}").status_code == 200
    sign_in(page, console)
    # (with the keyboard alone: the Trash is a link of the navigation, its buttons are reached with Tab)
    tab_to(page, "Trash")
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Trash", exact=True).wait_for()
    # When someone else restores the agent while the trash is open
    assert console.api("POST", f"/v1/agents/{agent}/restore").status_code == 200
    tab_to(page, f"Restore agent {agent}")
    page.keyboard.press("Enter")
    # Then the API's refusal shows under its row, and the row stays
    row = trash_row(page, "Agents in the trash", agent)
    refusal = row.locator("xpath=following-sibling::tr[1]").get_by_role("alert")
    refusal.wait_for()
    assert refusal.inner_text() == f"agent '{agent}' is not in the trash"
    assert row.count() == 1
    # And a user key, which sees the account's trash but may not restore from it, is told why on the row
    user_key = console.api("POST", "/v1/keys", json={"user": a_name("ana")}).json()["secret"]
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, console, user_key)
    open_trash(page)
    page.get_by_role("button", name=f"Restore memory {memory}").click()
    refusal = trash_row(page, "Memories in the trash", memory).locator("xpath=following-sibling::tr[1]").get_by_role(
        "alert")
    refusal.wait_for()
    assert "account" in refusal.inner_text()
    assert console.api("GET", f"/v1/memories/{memory}").status_code == 404
