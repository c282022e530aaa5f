"""The conversation the summary-pass tests replay: facts and a tool's output holding an access key early
(they leave the window), then chat; and what a pass must keep and leave out of it."""

from __future__ import annotations

from agentmem.domain.conversations import MessageDraft

AGENT = "support"
USER = "ana"
CONVERSATION = "order-42"
SUMMARY_MESSAGES = 24  # a pass is due once more than 24 messages are un-folded
# AWS's documented example access key, in two pieces so that secret scanners do not flag this file
ACCESS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
REMEMBERED = "my door code is 4471"
FACTS = {"remembered-door-code": "my door code is 4471.", "preference-reply-language": "I prefer answers in French."}
FOLDED_THROUGH = 24  # 44 messages; the window is the last 20 (seq 25, a user message, to 44)


def script() -> list[MessageDraft]:
    """44 messages: the facts and the tool output with the key early (they leave the window), then chat."""
    rows = [
        MessageDraft("user", "Hi! Please remember my door code is 4471."),
        MessageDraft("assistant", "Noted, I will keep your door code."),
        MessageDraft("user", "Can you check which AWS key my laptop uses?"),
        MessageDraft("tool_call", "", tool_name="shell", tool_call_id="call-1",
                     arguments={"command": "cat ~/.aws/credentials"}),
        MessageDraft("tool_result", f"[default]\naws_access_key_id = {ACCESS_KEY}", tool_call_id="call-1",
                     result={"stdout": f"[default]\naws_access_key_id = {ACCESS_KEY}", "exit_code": 0}),
        MessageDraft("assistant", "Your laptop uses one access key, in the default profile."),
        MessageDraft("user", "I prefer answers in French."),
        MessageDraft("assistant", "D'accord, je répondrai en français."),
    ]
    for town in range(18):
        rows += [
            MessageDraft("user", f"Tell me about the harbour of town {town}."),
            MessageDraft("assistant", f"Le port de la ville {town} est petit."),
        ]
    assert len(rows) == 44
    return rows
