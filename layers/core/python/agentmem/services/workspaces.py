"""Workspaces (SPEC §8): a conversation's files, with expiring links to download or upload them.

Who may reach a workspace is who may reach its conversation (``ConversationService.call_context``):
another account's or another user's answers 404. The files are in a blob store (S3, or a directory);
``domain/workspaces.py`` says where.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..domain.agents import AgentRecord
from ..domain.clock import Clock, iso
from ..domain.conversations import ConversationRef
from ..domain.cursor import decode_cursor, encode_cursor
from ..domain.errors import InvalidError, NotFoundError
from ..domain.models import Principal
from ..domain.workspaces import (
    DEFAULT_LINK_EXPIRES_S,
    LINK_METHODS,
    LIST_LIMIT_DEFAULT,
    LIST_LIMIT_MAX,
    MAX_API_FILE_BYTES,
    WorkspaceRef,
    agent_prefix,
    check_api_write,
    check_expires_in,
    check_path,
    check_prefix,
    check_upload_size,
    content_type,
    file_name,
    user_prefix,
)
from ..ports.blobs import BlobInfo, BlobNotFoundError, BlobStore
from .conversations import ConversationService

REDIRECT_LINK_S = 300  # a large file read through the API is sent on to a link this fresh


@dataclass(frozen=True)
class WorkspaceFile:
    path: str
    size_bytes: int
    modified_at: str
    url: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size_bytes": self.size_bytes, "modified_at": self.modified_at, "url": self.url}


@dataclass(frozen=True)
class FileRead:
    """A file read through the API: its bytes, or (too large for an API answer) a link to them."""

    path: str
    content_type: str
    data: bytes | None = None
    redirect: str | None = None


class WorkspaceService:
    def __init__(self, conversations: ConversationService, blobs: Callable[[], BlobStore], clock: Clock) -> None:
        self.conversations = conversations
        self._blobs = blobs  # built on first use: the API's cold start needs no S3 client
        self.clock = clock

    @property
    def store(self) -> BlobStore:
        return self._blobs()

    # --- which workspace, which key -----------------------------------------------------------

    def ref(self, principal: Principal, agent: str, conversation: str, *, user: str | None) -> WorkspaceRef:
        ctx = self.conversations.call_context(principal, agent, conversation, user=user)
        return WorkspaceRef(principal.account_id, ctx.agent.name, ctx.user, conversation)

    def _key(self, ref: WorkspaceRef, path: str, *, naming: bool = False) -> str:
        """The file's key; ``naming`` (a write) also stores the path of a hashed key beside it."""
        direct = ref.direct_key(path)
        if self.store.fits(direct):
            return direct
        hashed = ref.hashed_key(path)
        if naming:
            self.store.put(ref.name_key(hashed), path.encode("utf-8"))
        return hashed

    def _stat(self, ref: WorkspaceRef, path: str) -> tuple[str, BlobInfo]:
        key = self._key(ref, path)
        try:
            return key, self.store.stat(key)
        except BlobNotFoundError:
            raise NotFoundError(f"no file {path!r} in this workspace", path=path) from None

    def _file(self, path: str, info: BlobInfo, expires_in_s: int) -> WorkspaceFile:
        url = self.store.signed_url(info.key, method="GET", expires_in_s=expires_in_s, filename=file_name(path),
                                    content_type=content_type(path))
        return WorkspaceFile(path=path, size_bytes=info.size, modified_at=info.last_modified, url=url)

    # --- files --------------------------------------------------------------------------------

    def write(
        self, principal: Principal, agent: str, conversation: str, path: str, data: bytes, *, user: str | None = None
    ) -> WorkspaceFile:
        check_path(path)
        check_api_write(len(data))
        ref = self.ref(principal, agent, conversation, user=user)
        key = self._key(ref, path, naming=True)
        self.store.put(key, data)
        return self._file(path, self.store.stat(key), DEFAULT_LINK_EXPIRES_S)

    def read(
        self, principal: Principal, agent: str, conversation: str, path: str, *, user: str | None = None
    ) -> FileRead:
        check_path(path)
        ref = self.ref(principal, agent, conversation, user=user)
        key, info = self._stat(ref, path)
        kind = content_type(path)
        if info.size > MAX_API_FILE_BYTES:
            return FileRead(path, kind, redirect=self._file(path, info, REDIRECT_LINK_S).url)
        try:
            return FileRead(path, kind, data=self.store.get(key))
        except BlobNotFoundError:  # deleted between the two calls
            raise NotFoundError(f"no file {path!r} in this workspace", path=path) from None

    def delete(
        self, principal: Principal, agent: str, conversation: str, path: str, *, user: str | None = None
    ) -> dict[str, Any]:
        check_path(path)
        ref = self.ref(principal, agent, conversation, user=user)
        key, _ = self._stat(ref, path)
        self.store.delete(key)
        if ref.is_hashed(key):
            self.store.delete(ref.name_key(key))
        return {"path": path, "deleted": True}

    def files(
        self, principal: Principal, agent: str, conversation: str, *, user: str | None = None,
        prefix: str | None = None, limit: int | None = None, cursor: str | None = None,
        expires_in_s: int | None = None,
    ) -> tuple[list[WorkspaceFile], str | None]:
        """One page of the workspace's files, by path (paths too long to store as they are come last)."""
        start = check_prefix(prefix)
        expires = check_expires_in(expires_in_s)
        if limit is None:
            limit = LIST_LIMIT_DEFAULT
        if not 1 <= limit <= LIST_LIMIT_MAX:
            raise InvalidError(f"limit is 1 to {LIST_LIMIT_MAX}", field="limit")
        ref = self.ref(principal, agent, conversation, user=user)
        after = _decode_after(cursor, ref)
        found: list[WorkspaceFile] = []
        last_key: str | None = None
        for path, info in self._walk(ref, start, after):
            if len(found) == limit:
                return found, encode_cursor(last_key or "")
            found.append(self._file(path, info, expires))
            last_key = info.key
        return found, None

    def _walk(self, ref: WorkspaceRef, prefix: str, after: str) -> Iterator[tuple[str, BlobInfo]]:
        for info in self.store.list(ref.direct_key(prefix), start_after=after):
            path = ref.path_of(info.key)
            if path is not None:
                yield path, info
        for info in self.store.list(f"{ref.prefix}h/", start_after=after):
            try:
                path = self.store.get(ref.name_key(info.key)).decode("utf-8")
            except BlobNotFoundError:
                continue
            if path.startswith(prefix):
                yield path, info

    # --- links --------------------------------------------------------------------------------

    def link(
        self, principal: Principal, agent: str, conversation: str, path: str, *, user: str | None = None,
        method: str | None = None, expires_in_s: int | None = None, size_bytes: int | None = None,
    ) -> dict[str, Any]:
        """A link that downloads (GET) or uploads (PUT, exactly ``size_bytes``) the file with no key."""
        check_path(path)
        verb = "GET" if method is None else method
        if verb not in LINK_METHODS:
            raise InvalidError(f"method is GET (a download link) or PUT (an upload link), not {verb!r}",
                               field="method")
        expires = check_expires_in(expires_in_s)
        headers: dict[str, str] = {}
        if verb == "PUT":
            size = check_upload_size(size_bytes)
            ref = self.ref(principal, agent, conversation, user=user)
            key = self._key(ref, path, naming=True)
            url = self.store.signed_url(key, method="PUT", expires_in_s=expires, size=size)
            headers["Content-Length"] = str(size)
        else:
            if size_bytes is not None:
                raise InvalidError("size_bytes is for an upload link (method PUT)", field="size_bytes")
            ref = self.ref(principal, agent, conversation, user=user)
            _, info = self._stat(ref, path)
            url = self._file(path, info, expires).url
        expires_at = iso(self.clock() + timedelta(seconds=expires))
        return {"url": url, "method": verb, "path": path, "expires_in_s": expires, "expires_at": expires_at,
                "headers": headers}

    # --- going with the agent, the conversation, the user ---------------------------------------

    def _remove(self, prefix: str) -> int:
        # w/<account>/<agent>/<user>/<conversation>/<kind>/...: the "n" kind holds paths, not files
        return sum(1 for key in self.store.delete_prefix(prefix) if key.split("/", 6)[5] != "n")

    def purge_conversation(self, ref: ConversationRef) -> dict[str, int]:
        """ConversationService's purge hook."""
        workspace = WorkspaceRef(ref.account_id, ref.agent, ref.user_id, ref.key)
        return {"workspace_files": self._remove(workspace.prefix)}

    def purge_agent(self, record: AgentRecord) -> dict[str, int]:
        """AgentService's purge hook: every workspace of the agent, with or without a conversation record."""
        return {"workspace_files": self._remove(agent_prefix(record.account_id, record.name))}

    def erase_user(self, account_id: str, user: str, agents: list[AgentRecord]) -> dict[str, int]:
        """ErasureService's hook: the user's workspaces with each of these agents."""
        return {"workspace_files": sum(self._remove(user_prefix(account_id, a.name, user)) for a in agents)}


def _decode_after(cursor: str | None, ref: WorkspaceRef) -> str:
    """The storage key a listing's cursor resumes after; a cursor of another listing is a 400."""
    if not cursor:
        return ""
    key = decode_cursor(cursor)
    if not isinstance(key, str) or not key.startswith(ref.prefix):
        raise InvalidError("cursor is not one this listing gave; start again without it", field="cursor")
    return key
