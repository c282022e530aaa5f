"""Erasing a user (SPEC §4.6): their layer in every memory, their conversations, their agents."""

from __future__ import annotations

from datetime import timedelta

from ..domain.access import require_account_key
from ..domain.clock import iso
from ..domain.models import Layer, Principal
from ..domain.rules import check_user_id
from .agents import AgentService
from .conversations import ConversationService
from .keys import KeyService
from .memories import MemoryService
from .workspaces import WorkspaceService


class ErasureService:
    def __init__(
        self, memories: MemoryService, agents: AgentService, conversations: ConversationService,
        workspaces: WorkspaceService | None = None, keys: KeyService | None = None,
    ) -> None:
        self.memories = memories
        self.agents = agents
        self.conversations = conversations
        self.workspaces = workspaces
        self.keys = keys

    def erase_user(self, principal: Principal, user: str) -> dict[str, int]:
        """Remove everything of ``user`` in the caller's account, with a receipt of counts. Nothing of
        theirs is findable afterwards, nor left in the backend's files once the scrub has run (``scrub.py``); the
        account's own entries and other users' are untouched."""
        require_account_key(principal, "erasing a user")
        check_user_id(user)
        with self.memories.scrub.after():
            self.memories.scrub.removed("entries", "messages")
            return self._erase(principal, user)

    def _erase(self, principal: Principal, user: str) -> dict[str, int]:
        account = principal.account_id
        removed: dict[str, int] = {"agents": 0, "memories": 0, "conversations": 0, "messages": 0, "checkpoints": 0,
                                   "entries": 0, "layers": 0, "index_documents": 0, "workspace_files": 0,
                                   "keys": 0}

        def add(counts: dict[str, int]) -> None:
            for name, count in counts.items():
                removed[name] = removed.get(name, 0) + count

        # the user's own agents go for good, with their memories and conversations
        for agent in self.agents.store.list_agents(account, iso(self.agents.clock()), trash=False, user_id=user,
                                                   include_account=False):
            add(self.agents.purge(principal, agent.name))
        for agent in self.agents.store.list_agents(account, iso(self.agents.clock()), trash=True, user_id=user,
                                                   include_account=False):
            add(self.agents.purge(principal, agent.name))
        # their conversations with every other agent, and the workspaces of those conversations
        for ref in self.conversations.store.refs_of_user(account, user):
            add(self.conversations.purge_ref(f"agent:{ref.agent}", ref))
        if self.workspaces is not None:
            now_iso = iso(self.agents.clock())
            account_agents = [agent for trash in (False, True) for agent in self.agents.store.list_agents(
                account, now_iso, trash=trash, user_id=None, include_account=True) if agent.user_id is None]
            add(self.workspaces.erase_user(account, user, account_agents))
        # their own memories go for good (nothing attaches them now that their agents are gone): into the
        # trash due at once (those already there are brought forward), then the trash's own purge
        now = self.memories.clock()
        moment, due = iso(now), iso(now + timedelta(milliseconds=1))
        store = self.memories.store
        owned = [(m, trash) for trash in (False, True)
                 for m in store.list_memories(account, moment, trash=trash, user_id=user, include_account=False)]
        for memory, trashed in owned:
            if trashed:
                store.restore_memory(account, memory.name, moment)
            store.trash_memory(account, memory.name, moment, due)
            removed["memories"] += 1
            removed["entries"] += memory.entry_count
        store.purge_due(due)
        # their layer of every memory left (account memories, agents' own memories, their own memories)
        later = iso(self.memories.clock())
        for trash in (False, True):
            for memory in self.memories.store.list_memories(account, later, trash=trash, user_id=None,
                                                            include_account=True):
                count = self.conversations.agent_memory.entries.store.purge_layer(Layer(account, memory.name, user))
                if count:
                    removed["layers"] += 1
                    removed["entries"] += count
        # last, their API keys: an erased user can no longer call (a key cached by an authorizer lasts
        # until its cache does)
        if self.keys is not None:
            for key in self.keys.store.list_keys(account):
                if key.user_id == user:
                    self.keys.forget_key(key.key_id)
                    if self.keys.store.delete_key(account, key.key_id):
                        removed["keys"] += 1
        return removed
