"""Creating a memory and an agent from the console (Debian's Chromium through Playwright, as in
``test_console.py``): the API's own validation messages show next to the field they name, the text typed
stays, and a created one opens on its page."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from test_console import Console, accessible, browser, console, page, sign_in  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


def error_of(page: Any, label: str) -> str:  # noqa: F811
    """The message shown under a field (its aria-describedby), empty when there is none."""
    control = page.get_by_label(label, exact=True)
    text: str = page.evaluate("(el) => { const e = document.getElementById(el.getAttribute('aria-describedby'));"
                              " return e && !e.hidden ? e.textContent : ''; }", control.element_handle())
    return text


def test_create_a_memory_with_the_apis_message_next_to_a_bad_name(
    page: Any, console: Console, browser: Any  # noqa: F811
) -> None:
    sign_in(page, console)
    name_field = "Name (lowercase letters, digits and . _ -)"
    # a name the API refuses: its message, under the name, and the text stays to be corrected
    page.get_by_label(name_field).fill("Billing Notes")
    page.get_by_role("button", name="Create memory").click()
    page.get_by_text("may only hold lowercase letters, digits and . _ -").wait_for()
    assert error_of(page, name_field) == "memory 'Billing Notes' may only hold lowercase letters, digits and . _ -"
    assert page.get_by_label(name_field).input_value() == "Billing Notes"
    assert page.get_by_label(name_field).get_attribute("aria-invalid") == "true"
    accessible(page, browser)
    # a good one, in a user's layer: created, and opened
    memory, user = f"billing-{uuid.uuid4().hex[:6]}", f"user-{uuid.uuid4().hex[:6]}"
    page.get_by_label(name_field).fill(memory)
    page.get_by_label("User id (empty: an account memory, shared by its users)").fill(user)
    page.get_by_role("button", name="Create memory").click()
    page.get_by_role("heading", name=f"Memory {memory}").wait_for()
    stored = console.api("GET", f"/v1/memories/{memory}", params={"user": user}).json()
    assert (stored["scope"], stored["user_id"]) == ("user", user)
    # the same name again is not a second memory: said under the name
    page.get_by_role("link", name="Memories", exact=True).click()
    page.get_by_role("heading", name="Memories", exact=True).wait_for()
    page.get_by_label(name_field).fill(memory)
    page.get_by_label("User id (empty: an account memory, shared by its users)").fill(user)
    page.get_by_role("button", name="Create memory").click()
    page.get_by_text(f"memory '{memory}' already exists").wait_for()


def test_create_an_agent_with_the_apis_messages_next_to_their_fields(
    page: Any, console: Console, browser: Any  # noqa: F811
) -> None:
    sign_in(page, console)
    page.get_by_role("link", name="Agents", exact=True).click()
    page.get_by_role("heading", name="Agents", exact=True).wait_for()  # the memories list has a Name field too
    name_field, window_field = "Name (lowercase letters, digits and . _ -)", "Window (messages, 1–20; empty: default)"
    agent = f"billing-{uuid.uuid4().hex[:6]}"
    page.get_by_label(name_field).fill(agent)
    page.get_by_label("Instructions").fill("Answer billing questions.")
    page.get_by_label(window_field).fill("21")
    page.get_by_role("button", name="Create agent").click()
    # the API's message, under the window; the instructions typed are still there
    page.get_by_text("window_messages 21 is above the platform's 20").wait_for()
    assert error_of(page, window_field) == "window_messages 21 is above the platform's 20; it can only lower it"
    assert error_of(page, name_field) == ""
    assert page.get_by_label("Instructions").input_value() == "Answer billing questions."
    assert console.api("GET", f"/v1/agents/{agent}").status_code == 404
    accessible(page, browser)
    page.get_by_label(window_field).fill("12")
    page.get_by_role("button", name="Create agent").click()
    page.get_by_role("heading", name=f"Agent {agent}").wait_for()
    stored = console.api("GET", f"/v1/agents/{agent}").json()
    assert (stored["instructions"], stored["window_messages"], stored["version"]) == (
        "Answer billing questions.", 12, 1)
    # a name taken already: the API's 412, said under the name, and the agent is left as it was
    page.get_by_role("link", name="Agents", exact=True).click()
    page.get_by_role("heading", name="Agents", exact=True).wait_for()  # the memories list has a Name field too
    page.get_by_label(name_field).fill(agent)
    page.get_by_label("Instructions").fill("Something else.")
    page.get_by_role("button", name="Create agent").click()
    page.get_by_text(f"agent '{agent}' already exists").wait_for()
    assert error_of(page, name_field).startswith(f"agent '{agent}' already exists")
    assert console.api("GET", f"/v1/agents/{agent}").json()["instructions"] == "Answer billing questions."
