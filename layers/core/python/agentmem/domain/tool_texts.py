"""What the agent tools say to a model: each tool's description and each argument's. Pure text.

A description says what the tool does, when to use it, and which memory it touches without a
``memory`` argument (SPEC §3.3), so a model can pick the right tool and the right arguments.
"""

from __future__ import annotations

_SEARCH = (
    "Search memory for entries by meaning and by words. Use it before answering when something learned "
    "earlier may matter (a preference, a fact about the user, a procedure, a decision), and to find an "
    "entry's exact name before reading, changing or deleting it. Without `memory` it searches every "
    "memory you read: your own and each attached one, the user's entries and the account's. An entry is "
    "found when it says what the query means, even in other words, or when its name, description or "
    "content holds a word of the query (a word also finds the longer words it starts: 'refund' finds "
    "'refunds'); the closest matches rank first, and words in the name or description count more. "
    "Returns the best entries with their full content, the memory each is in, and user_id (null for the "
    "account's)."
)
_READ = (
    "Read one entry in full (content, description, version) by its exact name. Use it when the memory "
    "index or a search shows an entry whose content you need, and before changing an entry you have not "
    "read. Without `memory` it looks in your own memory first, then in each attached memory in order; "
    "when two memories hold the name it returns the first and names the others in `also_in`. In a "
    "user's conversation the user's own copy wins over the account's."
)
_SAVE_BODY = (
    "Use it at once when the user asks you to remember something (save it word for word before you "
    "answer), and when you learn a durable fact, preference or decision worth keeping across "
    "conversations; prefer updating an existing entry (search first) to creating a near-duplicate. Do not "
    "save secrets nobody asked you to keep (keys or tokens a tool printed). Without `memory` it writes "
    "your own memory; pass `memory` to write an attached memory you may write. In a user's conversation "
    "the entry goes to that user's layer (private to them); content that looks like a credential or "
    "personal data is always kept private to the user. Pass `version` (from a read) to save only if "
    "nobody changed the entry since (0: only if it does not exist yet)."
)
_SAVE = (
    "Save a note to memory: create the entry `name` or replace the one with that name. " + _SAVE_BODY
    + " A new entry needs a one-line `description` saying what it is for (it is all you see of the entry "
    "in your memory index); saving an existing entry without `description` keeps its current one."
)
_STORE = (
    "Store a note in memory: create the entry `key` or replace the one with that key. " + _SAVE_BODY
    + " Give a one-line `description` saying what it is for (it is all you see of the entry in your "
    "memory index): when a new entry comes without one, its content's first line (at most 200 "
    "characters) is used; an existing entry saved without one keeps its current description."
)
_DELETE_BODY = (
    "Use it when the user asks you to forget something, or an entry is wrong or obsolete (to correct "
    "an entry, save it instead). Without `memory` it deletes from your own memory (in a user's "
    "conversation, that user's copy; the account's entry, if any, stays); pass `memory` for an attached "
    "memory you may write. Pass `version` to delete only if the entry is still at that version."
)
_JOURNAL_SEARCH = (
    "Search the messages of your past conversations with this user by meaning and by words. Use it to "
    "find what was said, asked or decided in an earlier conversation that your memory does not hold. "
    "Without `conversation` it searches all of them; `after` and `before` keep the messages written "
    "between two times. Returns each hit's conversation, seq, role, when it was written (created_at) and "
    "a snippet: use its date to answer when something was said. Not available through MCP."
)
_TOOL_CALL_VIEW = (
    "Return the full arguments and result of an earlier tool call by its tool_call_id. Use it when the "
    "copy of that call in your context was truncated and you need all of it. Without `conversation` it "
    "looks in the current conversation. Not available through MCP."
)

DESCRIPTIONS: dict[str, str] = {
    "memory__search": _SEARCH,
    "memory_recall": _SEARCH,
    "memory__read": _READ,
    "memory__save": _SAVE,
    "memory_store": _STORE,
    "memory__delete": "Delete the entry `name` from memory. " + _DELETE_BODY,
    "memory_forget": "Forget the entry `key`: delete it from memory. " + _DELETE_BODY,
    "journal_message_search": _JOURNAL_SEARCH,
    "journal_tool_call_view": _TOOL_CALL_VIEW,
}

_ENTRY_NAME = "The entry's name: 1–64 characters of lowercase letters, digits and . _ - (e.g. 'refund-policy')."
_MEMORY_WRITE = (
    "The memory to write, by name (e.g. 'company', or 'agent:<agent>' for an agent's own). Leave it out "
    "for your own memory."
)
_TEXTS: dict[tuple[str, str], str] = {
    ("search", "query"): "What to look for, in words or as a question, e.g. 'refund policy'.",
    ("search", "limit"): "How many entries to return, 1–100 (default 10).",
    ("search", "memory"): "Search only this memory, by name. Leave it out to search every memory you read.",
    ("read", "name"): _ENTRY_NAME,
    ("read", "memory"): (
        "Read from this memory only, by name. Leave it out to look in your own memory first, then the "
        "attached ones."
    ),
    ("save", "name"): _ENTRY_NAME,
    ("save", "key"): _ENTRY_NAME,
    ("save", "content"): (
        "The note itself, Markdown, 1–20,000 characters. Keep what you were asked to remember verbatim."
    ),
    ("save", "description"): (
        "One line, at most 200 characters, saying what the entry is for. Required for a new entry; left "
        "out, an existing entry keeps its own."
    ),
    ("save", "category"): (
        "A short tag of lowercase letters, digits and _, e.g. user_profile, preference, fact, procedure "
        "(default note)."
    ),
    ("save", "importance"): "0.0–1.0 (default 0.5); higher ranks first. user_profile entries at 0.7+ are pinned.",
    ("save", "visibility"): (
        "'private' keeps the entry to the user of this conversation; 'shared' asks for the account's "
        "layer, which every user's conversation reads (allowed only where the agent may write it)."
    ),
    ("save", "expires_at"): (
        "When the entry should be forgotten, an ISO-8601 time in the future (e.g. 2030-01-31T00:00:00Z)."
    ),
    ("save", "version"): "Save only if the stored version is this one (0: only if the entry does not exist yet).",
    ("save", "memory"): _MEMORY_WRITE,
    ("delete", "name"): _ENTRY_NAME,
    ("delete", "key"): _ENTRY_NAME,
    ("delete", "version"): "Delete only if the stored version is this one.",
    ("delete", "memory"): (
        "The memory to delete from, by name. Leave it out for your own memory."
    ),
    ("journal_search", "query"): "What to look for in past messages, in words or as a question.",
    ("journal_search", "conversation"): "Search only this conversation, by its key. Leave it out to search them all.",
    ("journal_search", "limit"): "How many messages to return, 1–100 (default 10).",
    ("journal_search", "after"): "Only messages written after this time, ISO 8601 (e.g. 2026-03-01 or "
                                 "2026-03-01T09:30:00Z).",
    ("journal_search", "before"): "Only messages written before this time, ISO 8601 (e.g. 2026-04-01).",
    ("tool_call_view", "tool_call_id"): "The id of the earlier tool call, as it appears in the conversation.",
    ("tool_call_view", "conversation"): "The conversation's key. Leave it out for the current conversation.",
}
_OVERRIDES: dict[tuple[str, str], str] = {
    ("memory_store", "description"): (
        "One line, at most 200 characters, saying what the entry is for. Left out, a new entry takes its "
        "content's first line and an existing one keeps its own."
    ),
}


def parameter_text(tool: str, operation: str, argument: str) -> str:
    """The description of one argument of one tool."""
    return _OVERRIDES.get((tool, argument)) or _TEXTS[(operation, argument)]
