"""The console's pages as a person with another screen or no mouse meets them (issue 31's "plain, fast and
accessible"): every page, loaded with its data, in Debian's Chromium through Playwright (``test_console.py``).

- readable on a 360-pixel-wide window and at 200% zoom (a 1280×800 window zoomed to 200% is a 640×400 CSS
  viewport at twice the pixel ratio): the page never scrolls sideways (``document.scrollingElement.scrollWidth
  <= innerWidth``); a wide table scrolls in its own box;
- no layout shift while its data loads: the Layout Instability API's ``layout-shift`` entries of one load of
  the page, read by a ``PerformanceObserver`` from the first byte, add up to less than 0.1 (the threshold
  browsers call a good cumulative layout shift);
- every control reachable with Tab, each showing where the focus is (an outline, or a shadow) when it has it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from test_console import Console, accessible, browser, console, conversation, sign_in  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow

GOOD_CLS = 0.1
LATENCY_S = 0.15  # between two answers of the API, in the layout shift test
# (name, viewport, device scale): a phone's width, and a laptop's window at 200% zoom
NARROW = {"360px": ({"width": 360, "height": 740}, 1), "200% zoom": ({"width": 640, "height": 400}, 2)}
# every layout shift not caused by input, from the start of the document (an init script runs before the page's)
RECORD_SHIFTS = """
window.__shifts = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (!e.hadRecentInput) window.__shifts.push({ value: e.value,
    nodes: (e.sources || []).map((s) => s.node ? (s.node.id || s.node.className || s.node.nodeName) : "") });
}).observe({ type: "layout-shift", buffered: true });
"""
CONTROLS = ("a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex='-1'])")


@dataclass(frozen=True)
class Data:
    """What the pages show: names as long as the API takes, a text with a long unbroken address, a
    conversation with tool calls, a file in its workspace."""

    memory: str
    entry: str
    agent: str
    user: str
    conversation: str
    trashed: str

    def pages(self) -> dict[str, tuple[str, str]]:
        """Each page: its address (after /console), and a text it shows once its data is there."""
        conv = f"#/conversations/{self.agent}/{self.conversation}?user={self.user}"
        return {
            "memories": ("#/memories", self.memory),
            "memory": (f"#/memories/{self.memory}", self.entry),
            "entry": (f"#/memories/{self.memory}/entry/{self.entry}", "Category · importance · visibility"),
            "agents": ("#/agents", self.agent),
            "agent": (f"#/agents/{self.agent}", "Save settings"),
            "conversations": (f"#/conversations/{self.agent}?user={self.user}", self.conversation),
            "conversation": (conv, "Workspace files"),
            "erase": ("#/erase", "Review what goes"),
            "trash": ("#/trash", self.trashed),
        }


@pytest.fixture(scope="module")
def data(console: Console) -> Data:  # noqa: F811 (the fixture imported above)
    tag = uuid.uuid4().hex[:6]
    memory = f"customer-support-knowledge-for-the-european-billing-team-{tag}"
    entry = f"refunds-and-chargebacks-for-orders-paid-by-bank-transfer-{tag}"
    agent = f"billing-support-agent-for-the-european-customers-desk-{tag}"
    user, key = f"customer-{tag}", f"ticket-about-a-refund-of-an-invoice-paid-twice-{tag}"
    assert console.api("PUT", f"/v1/memories/{memory}").status_code == 201
    address = "https://billing.example.com/policies/refunds/" + "bank-transfer-chargeback-" * 6 + "rules.html"
    saved = console.api("PUT", f"/v1/memories/{memory}/entries/{entry}", json={
        "content": f"Refund within 30 days of purchase, to the account that paid.\nThe rules: {address}",
        "description": "Our refund rules for orders paid by bank transfer, and what to do about chargebacks"})
    assert saved.status_code == 201, saved.text
    assert console.api("PUT", f"/v1/memories/{memory}/entries/{entry}",
                       json={"content": "Refund within 45 days of purchase."}).status_code == 200
    assert console.api("PUT", f"/v1/agents/{agent}", json={
        "instructions": "Answer billing questions.", "memories": [{"name": memory}]}).status_code == 201
    conversation(console, agent, user, key, turns=3)
    written = console.api("PUT", f"/v1/agents/{agent}/conversations/{key}/workspace/files/"
                          "exports/invoices-of-the-last-quarter-for-the-customer.csv",
                          params={"user": user}, data=b"invoice,paid\n1,yes\n",
                          headers={"Content-Type": "application/octet-stream"})
    assert written.status_code in (200, 201), written.text
    trashed = f"old-billing-desk-notes-before-the-move-to-new-system-{tag}"
    assert console.api("PUT", f"/v1/memories/{trashed}").status_code == 201
    assert console.api("DELETE", f"/v1/memories/{trashed}").status_code in (200, 204)
    return Data(memory, entry, agent, user, key, trashed)


@pytest.fixture
def opened(browser: Any, console: Console, request: pytest.FixtureRequest) -> Iterator[Any]:  # noqa: F811
    viewport, scale = getattr(request, "param", ({"width": 1100, "height": 800}, 1))
    context = browser.new_context(viewport=viewport, device_scale_factor=scale)
    context.add_init_script(RECORD_SHIFTS)
    page = context.new_page()
    page.set_default_timeout(10_000)
    sign_in(page, console)
    yield page
    context.close()


def load(page: Any, console: Console, address: str, shows: str) -> None:  # noqa: F811
    """One load of the page (not a route change within it), until its data is shown and nothing is pending."""
    page.goto(console.base_url + "/console" + address)
    page.reload()
    page.get_by_text(shows).first.wait_for()
    page.wait_for_load_state("networkidle")


def sideways(page: Any) -> int:
    """How far the page scrolls sideways (0: it fits its window)."""
    result: int = page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
    return result


def sticking_out(page: Any) -> list[str]:
    """The innermost elements that reach past the window's right edge (what to fix when a page scrolls)."""
    found: list[str] = page.evaluate("""() => [...document.querySelectorAll("body *")]
        .filter((el) => el.getBoundingClientRect().right > innerWidth + 0.5
            && ![...el.children].some((c) => c.getBoundingClientRect().right > innerWidth + 0.5))
        .filter((el) => !el.closest(".scroll"))
        .map((el) => el.tagName.toLowerCase() + "." + el.className + " " + el.textContent.trim().slice(0, 40))""")
    return found[:10]


@pytest.mark.parametrize("opened", list(NARROW.values()), ids=list(NARROW), indirect=True)
def test_every_page_fits_a_narrow_or_zoomed_window_without_sideways_scrolling(
    opened: Any, console: Console, data: Data  # noqa: F811
) -> None:
    page = opened
    overflowing = {}
    for name, (address, shows) in data.pages().items():
        load(page, console, address, shows)
        if sideways(page) > 0:
            overflowing[name] = (sideways(page), sticking_out(page))
    # and the states a page opens into: an entry's editor and its history with a diff
    load(page, console, *data.pages()["entry"])
    page.get_by_role("button", name="History").click()
    page.get_by_role("button", name="Show diff").click()
    page.get_by_role("region", name="Differences").wait_for()
    if sideways(page) > 0:
        overflowing["entry history"] = (sideways(page), sticking_out(page))
    page.get_by_role("button", name="Edit").click()
    page.get_by_label("Content (Markdown)").wait_for()
    if sideways(page) > 0:
        overflowing["entry editor"] = (sideways(page), sticking_out(page))
    page.goto(console.base_url + "/console#/erase")
    page.get_by_label("User id").fill(data.user)
    page.get_by_role("button", name="Review what goes…").click()
    page.get_by_role("alertdialog").wait_for()
    if sideways(page) > 0:
        overflowing["erase review"] = (sideways(page), sticking_out(page))
    page.evaluate("sessionStorage.clear()")  # and the sign-in page
    page.reload()
    page.get_by_label("API key").wait_for()
    if sideways(page) > 0:
        overflowing["sign in"] = (sideways(page), sticking_out(page))
    assert overflowing == {}, "pixels of sideways scrolling, by page"


def test_no_page_shifts_its_layout_while_its_data_loads(opened: Any, console: Console, data: Data) -> None:  # noqa: F811
    page = opened
    # the answers come one after another, a network's latency apart (a local server answers them all in one
    # frame, where nothing could be seen to move)
    page.context.route("**/v1/**", lambda route: (time.sleep(LATENCY_S), route.continue_()))
    # the observer sees shifts in this browser: an element pushed down by one put above it is one
    load(page, console, "#/memories", data.memory)
    assert page.evaluate("""() => new Promise((done) => {
        const before = window.__shifts.length;
        const pusher = document.createElement("div");
        document.getElementById("main").prepend(pusher);
        requestAnimationFrame(() => setTimeout(() => {
            pusher.style.height = "300px";
            requestAnimationFrame(() => setTimeout(() => done(window.__shifts.length > before), 200));
        }, 50));
    })""")
    shifted = {}
    for name, (address, shows) in data.pages().items():
        load(page, console, address, shows)
        shifts = page.evaluate("window.__shifts")
        total = sum(s["value"] for s in shifts)
        if total >= GOOD_CLS:
            shifted[name] = (round(total, 3), shifts)
    assert shifted == {}, "cumulative layout shift of one load, by page"


def test_every_control_is_reached_with_tab_and_shows_its_focus(
    opened: Any, console: Console, data: Data, browser: Any  # noqa: F811
) -> None:
    page = opened
    unreached, unseen = {}, {}
    for name, (address, shows) in data.pages().items():
        load(page, console, address, shows)
        count = page.evaluate(f"""() => {{
            const visible = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";
            const all = [...document.querySelectorAll("{CONTROLS}")].filter((el) => !el.disabled && visible(el)
                && !el.closest("details:not([open]) > :not(summary)"));
            all.forEach((el, i) => {{ el.dataset.control = String(i); }});
            return all.length;
        }}""")
        reached: set[str] = set()
        for _ in range(count + 15):
            page.keyboard.press("Tab")
            state = page.evaluate("""() => {
                const el = document.activeElement;
                if (!el || el === document.body) return null;
                const style = getComputedStyle(el);
                const outlined = style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2;
                return { control: el.dataset.control ?? null, shown: outlined || style.boxShadow !== "none",
                         what: el.tagName.toLowerCase() + " " + (el.textContent.trim().slice(0, 30)
                               || el.getAttribute("aria-label") || el.name || "") };
            }""")
            if state is None or state["control"] is None:
                continue
            reached.add(state["control"])
            if not state["shown"]:
                unseen.setdefault(name, set()).add(state["what"])
        missing = page.evaluate("""(reached) => [...document.querySelectorAll("[data-control]")]
            .filter((el) => !reached.includes(el.dataset.control))
            .map((el) => el.tagName.toLowerCase() + " " + (el.textContent.trim().slice(0, 30) || el.name || ""))""",
                                sorted(reached))
        if missing:
            unreached[name] = missing
    assert unreached == {}, "controls Tab never reached, by page"
    assert unseen == {}, "controls focused without a visible focus indicator, by page"
