"""The rules of a workspace (SPEC §8) at their boundaries: paths, link lifetimes, upload sizes, the file
types and names a download carries, and where a workspace's files are stored (agentmem.domain.workspaces)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from agentmem.domain import workspaces as ws
from agentmem.domain.errors import InvalidError, TooLargeError
from agentmem.domain.workspaces import WorkspaceRef


def refused(check: Callable[..., Any], *args: Any, **kwargs: Any) -> InvalidError:
    """Run a check that must refuse its input with a 400; return the error."""
    with pytest.raises(InvalidError) as invalid:
        check(*args, **kwargs)
    assert invalid.value.status == 400
    assert invalid.value.code == "invalid"
    assert invalid.value.message
    return invalid.value


def path_of_bytes(size: int, char: str = "a") -> str:
    """A valid path of exactly ``size`` UTF-8 bytes: segments of at most 200 bytes of ``char``, then ASCII."""
    width = len(char.encode())
    segments: list[str] = []
    left = size
    while left > 0:
        if segments:
            left -= 1  # the '/' before this segment
        take = min(200, left)
        segment = char * (take // width) + "a" * (take % width)
        segments.append(segment)
        left -= take
    path = "/".join(segments)
    assert len(path.encode()) == size
    return path


def test_the_contract_numbers() -> None:
    assert ws.MAX_FILE_BYTES == 100 * 1024 * 1024 == 104_857_600
    assert ws.MAX_API_FILE_BYTES == 4 * 1024 * 1024 == 4_194_304
    assert ws.MAX_PATH_BYTES == 1024
    assert ws.MAX_SEGMENT_BYTES == 255
    assert (ws.DEFAULT_LINK_EXPIRES_S, ws.MAX_LINK_EXPIRES_S) == (3600, 86_400)
    assert (ws.LIST_LIMIT_DEFAULT, ws.LIST_LIMIT_MAX) == (100, 1000)
    assert ws.LINK_METHODS == ("GET", "PUT")


# -- paths -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [
    "a", "notes.md", "reports/q3.csv", "a/b/c/d/e.txt", "résumé.pdf", "日本語/ファイル.txt", "emoji-😀.png",
    "with space.txt", " leading and trailing ", "...", ".hidden", "a./b..", "~", "a:b", "q?x=1#frag", "100%.txt",
    "quote\"s'.txt",
])
def test_relative_slash_separated_paths_are_accepted_as_they_are(path: str) -> None:
    assert ws.check_path(path) == path


def test_a_path_is_at_most_1024_utf8_bytes() -> None:
    # 1,024 bytes pass; 1,025 do not
    assert ws.check_path(path_of_bytes(1024)) == path_of_bytes(1024)
    assert refused(ws.check_path, path_of_bytes(1025)).details["field"] == "path"
    # counted in bytes, not characters: 1,024 bytes of two-byte characters pass ...
    wide = path_of_bytes(1024, "é")
    assert len(wide) < 1024
    assert ws.check_path(wide) == wide
    # ... and 1,025 bytes in fewer than 1,025 characters do not
    over = path_of_bytes(1023) + "é"  # 1,025 bytes, 1,024 characters
    assert len(over) == 1024
    assert refused(ws.check_path, over).details["field"] == "path"
    four = path_of_bytes(1021) + "😀"  # 1,025 bytes
    assert refused(ws.check_path, four).details["field"] == "path"


def test_a_segment_is_at_most_255_bytes() -> None:
    assert ws.check_path("a" * 255) == "a" * 255
    assert ws.check_path("dir/" + "a" * 255 + "/x") == "dir/" + "a" * 255 + "/x"
    assert refused(ws.check_path, "a" * 256).details["field"] == "path"
    assert refused(ws.check_path, "dir/" + "a" * 256 + "/x").details["field"] == "path"
    # in bytes: 127 two-byte characters and one ASCII (255 bytes) pass, 128 of them (256 bytes) do not
    assert ws.check_path("é" * 127 + "a") == "é" * 127 + "a"
    assert refused(ws.check_path, "é" * 128).details["field"] == "path"
    assert refused(ws.check_path, "dir/" + "😀" * 64).details["field"] == "path"


@pytest.mark.parametrize("path", [
    # nothing
    "",
    # '..' and '.' segments, anywhere
    "..", "../etc/passwd", "a/../b", "a/..", ".", "./a", "a/./b", "a/.",
    # absolute
    "/", "/a", "/etc/passwd", "//a",
    # empty segments, a trailing slash
    "a//b", "a/", "a/b/", "a///", "a//",
    # NUL
    "\x00", "a\x00b", "a/b\x00.txt",
    # backslashes (Windows separators and escapes)
    "a\\b", "\\a", "a\\", "..\\..\\x", "C:\\x",
    # lone surrogates (not text: cannot be UTF-8)
    "a\ud800b", "\udc00", "dir/\udfff.txt", "\ud83d",
])
def test_bad_paths_are_refused_with_field_path(path: str) -> None:
    assert refused(ws.check_path, path).details["field"] == "path"


@pytest.mark.parametrize("code", [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)])
def test_every_control_character_is_refused(code: int) -> None:
    # C0 (NUL, tab, newline, carriage return, escape ...), DEL, and C1 (NEL, CSI ...): Unicode's Cc
    char = chr(code)
    for path in (f"a{char}b", f"{char}", f"dir/{char}.txt", f"{char}dir/x"):
        assert refused(ws.check_path, path).details["field"] == "path", (hex(code), path)


# every bidirectional control, zero-width and other invisible formatting character: a sample of each kind
INVISIBLE = ["\u202e", "\u202a", "\u2066", "\u2069", "\u200e", "\u200f", "\u061c", "\u200b", "\u200c", "\u2060",
             "\ufeff", "\u00ad", "\u2061", "\u180e", "\u034f", "\u3164", "\ufff9", "\U000e0041", "\U000e0001",
             "\U0001bca0", "\U0001d173"]


@pytest.mark.parametrize("char", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_a_path_holding_an_invisible_character_is_refused(char: str) -> None:
    # Given a file name with a right-to-left override ("report\u202etxt.exe" shows as "reportexe.txt") or
    # another character that a person does not see
    for path in (f"report{char}txt.exe", f"dir{char}/a.txt", f"a/{char}b.txt"):
        # When / Then it is refused, naming the path
        assert refused(ws.check_path, path).details["field"] == "path", (hex(ord(char)), path)


def test_a_path_may_hold_emoji_and_any_script() -> None:
    # Given file names in other scripts and with emoji (a joined family, a heart with its presentation selector)
    for path in ("отчёт/2026.txt", "תיקייה/קובץ.txt", "photos/👨\u200d👩\u200d👧 ❤️.jpg", "日本語/ファイル.md"):
        # When / Then they are accepted as they are
        assert ws.check_path(path) == path


def test_the_characters_next_to_the_control_ranges_are_fine() -> None:
    for char in (" ", "~", "\xa0", "¡", "ÿ"):
        assert ws.check_path(f"a{char}b") == f"a{char}b"


@pytest.mark.parametrize("value", [None, 42, b"a.txt", ["a.txt"], {"path": "a"}])
def test_a_path_that_is_not_text_is_refused(value: object) -> None:
    assert refused(ws.check_path, value).details["field"] == "path"


def test_the_refusal_names_the_field_it_was_given() -> None:
    assert refused(ws.check_path, "../x", field="target").details["field"] == "target"


def test_a_prefix_is_any_start_of_a_path() -> None:
    assert ws.check_prefix(None) == ""
    assert ws.check_prefix("") == ""
    for prefix in ("r", "reports", "reports/", "reports/q", "a/b/"):
        assert ws.check_prefix(prefix) == prefix
    for prefix in ("/", "/reports", "../", "a/../", "a\x00", "a\\b"):
        assert refused(ws.check_prefix, prefix).details["field"] == "prefix", prefix


# -- link lifetimes, upload sizes, API writes -------------------------------------------------------------
def test_a_link_lasts_1_second_to_1_day_an_hour_by_default() -> None:
    assert ws.check_expires_in(None) == 3600
    assert ws.check_expires_in(1) == 1
    assert ws.check_expires_in(3600) == 3600
    assert ws.check_expires_in(86_400) == 86_400


@pytest.mark.parametrize("value", [0, -1, 86_401, 10**9, True, False, 1.0, 3600.0, 0.5, "3600", "", [3600]])
def test_other_link_lifetimes_are_refused(value: object) -> None:
    error = refused(ws.check_expires_in, value)
    assert error.details["field"] == "expires_in_s"
    assert error.details["limit"] == 86_400


def test_an_upload_is_0_to_100_mib() -> None:
    assert ws.check_upload_size(0) == 0
    assert ws.check_upload_size(1) == 1
    assert ws.check_upload_size(100 * 1024 * 1024) == 104_857_600
    # one byte more is too large (413), naming the limit
    with pytest.raises(TooLargeError) as too_large:
        ws.check_upload_size(100 * 1024 * 1024 + 1)
    assert too_large.value.status == 413
    assert too_large.value.code == "too_large"
    assert too_large.value.details["limit"] == 104_857_600
    assert too_large.value.details["field"] == "size_bytes"


@pytest.mark.parametrize("value", [None, -1, True, False, 1.5, 10.0, "10", [10]])
def test_an_upload_needs_a_whole_size(value: object) -> None:
    error = refused(ws.check_upload_size, value)
    assert error.details["field"] == "size_bytes"
    assert not isinstance(error, TooLargeError)


def test_a_write_through_the_api_is_at_most_6_mib_and_points_to_upload_links() -> None:
    ws.check_api_write(0)
    ws.check_api_write(4 * 1024 * 1024)
    with pytest.raises(TooLargeError) as too_large:
        ws.check_api_write(4 * 1024 * 1024 + 1)
    assert too_large.value.status == 413
    assert too_large.value.details["limit"] == 4_194_304
    assert "upload link" in too_large.value.message
    assert "PUT" in too_large.value.message


# -- what a download says about the file ---------------------------------------------------------------------
@pytest.mark.parametrize(("path", "expected"), [
    ("notes.txt", "text/plain; charset=utf-8"),
    ("NOTES.TXT", "text/plain; charset=utf-8"),
    ("page.html", "text/html; charset=utf-8"),
    ("table.csv", "text/csv; charset=utf-8"),
    ("data.json", "application/json; charset=utf-8"),
    ("feed.xml", "application/xml; charset=utf-8"),
    ("logo.svg", "image/svg+xml; charset=utf-8"),
    ("photo.png", "image/png"),
    ("photo.jpg", "image/jpeg"),
    ("paper.pdf", "application/pdf"),
    ("bundle.zip", "application/zip"),
    ("reports/2026/q3.csv", "text/csv; charset=utf-8"),
    # compressed: the bytes are gzip, whatever is inside
    ("table.csv.gz", "application/octet-stream"),
    ("backup.tar.gz", "application/octet-stream"),
    # nothing to go by
    ("Makefile", "application/octet-stream"),
    ("blob.unknownext", "application/octet-stream"),
    ("dir.txt/noext", "application/octet-stream"),
])
def test_content_type_is_guessed_from_the_name(path: str, expected: str) -> None:
    assert ws.content_type(path) == expected


def test_file_name_is_the_last_segment() -> None:
    assert ws.file_name("a.txt") == "a.txt"
    assert ws.file_name("reports/2026/q3.csv") == "q3.csv"


def test_content_disposition_of_a_plain_name() -> None:
    assert ws.content_disposition("q3.csv") == "attachment; filename=\"q3.csv\"; filename*=UTF-8''q3.csv"


def test_content_disposition_never_lets_a_name_break_out_of_its_quotes() -> None:
    value = ws.content_disposition('say "hi"\\now.txt')
    fallback = value.split(";")[1].strip()
    assert fallback == 'filename="say _hi__now.txt"'
    assert value.endswith("filename*=UTF-8''say%20%22hi%22%5Cnow.txt")
    # a name that tries to add a parameter stays inside the encoded one
    sneaky = ws.content_disposition('a"; filename="evil.exe')
    assert sneaky.count('"') == 2
    assert sneaky.startswith('attachment; filename="a_; filename=_evil.exe"; ')


def test_content_disposition_of_a_non_ascii_name() -> None:
    value = ws.content_disposition("résumé 日本.pdf")
    # old clients get an ASCII stand-in, others the exact name (RFC 6266 / RFC 5987)
    assert value == "attachment; filename=\"r_sum_ __.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%E6%97%A5%E6%9C%AC.pdf"
    assert value.isascii()


# -- where a workspace's files are stored ----------------------------------------------------------------
BASE = WorkspaceRef("acct_1", "support", "ana", "c1")
OTHERS = {
    "another account": WorkspaceRef("acct_2", "support", "ana", "c1"),
    "another agent": WorkspaceRef("acct_1", "sales", "ana", "c1"),
    "another user": WorkspaceRef("acct_1", "support", "bob", "c1"),
    "the account's conversation": WorkspaceRef("acct_1", "support", None, "c1"),
    "another conversation": WorkspaceRef("acct_1", "support", "ana", "c2"),
    "a conversation named like the first and more": WorkspaceRef("acct_1", "support", "ana", "c10"),
    "a user named 'account'": WorkspaceRef("acct_1", "support", "account", "c1"),
}


@pytest.mark.parametrize("name", list(OTHERS))
def test_distinct_workspaces_never_share_a_prefix(name: str) -> None:
    other = OTHERS[name]
    assert not other.prefix.startswith(BASE.prefix)
    assert not BASE.prefix.startswith(other.prefix)
    # nor does any key of one fall under the other
    for path in ("a.txt", "x" * 200, "reports/q3.csv"):
        assert not other.direct_key(path).startswith(BASE.prefix)
        assert not BASE.direct_key(path).startswith(other.prefix)
        assert not other.hashed_key(path).startswith(BASE.prefix)


def test_names_with_slashes_cannot_shift_into_another_workspace() -> None:
    # account "a", agent "b/c" vs account "a/b", agent "c": the same text joined, but hashed apart
    one = WorkspaceRef("a", "b/c", "u", "k")
    two = WorkspaceRef("a/b", "c", "u", "k")
    assert one.prefix != two.prefix
    assert not one.prefix.startswith(two.prefix) and not two.prefix.startswith(one.prefix)
    # and the same for the user and the conversation
    assert WorkspaceRef("a", "b", "u/v", "k").prefix != WorkspaceRef("a", "b", "u", "v/k").prefix


def test_the_prefix_is_fixed_length_and_shows_no_names() -> None:
    for ref in (BASE, *OTHERS.values(), WorkspaceRef("acct_" + "9" * 40, "agent-" + "x" * 50, "u" * 64, "k" * 64)):
        assert ref.prefix.startswith("w/")
        assert ref.prefix.endswith("/")
        assert len(ref.prefix.encode()) == len(BASE.prefix.encode())
        segments = ref.prefix.split("/")
        assert [len(s) for s in segments] == [1, 16, 16, 16, 16, 0]
    for name in ("acct_1", "support", "ana", "c1"):
        assert name not in BASE.prefix.split("/")


def test_the_agent_and_user_prefixes_hold_exactly_their_workspaces() -> None:
    agent = ws.agent_prefix("acct_1", "support")
    ana = ws.user_prefix("acct_1", "support", "ana")
    assert BASE.agent_prefix == agent
    assert BASE.user_prefix == ana
    assert BASE.prefix.startswith(ana) and ana.startswith(agent)
    for name in ("another user", "the account's conversation", "a user named 'account'"):
        assert OTHERS[name].prefix.startswith(agent)
        assert not OTHERS[name].prefix.startswith(ana), name
    assert OTHERS["another conversation"].prefix.startswith(ana)
    assert not OTHERS["another agent"].prefix.startswith(agent)
    assert not OTHERS["another account"].prefix.startswith(agent)
    assert ws.user_prefix("acct_1", "sales", "ana") != ana


@pytest.mark.parametrize("path", ["a.txt", "reports/2026/q3.csv", "résumé.pdf", "a b/c%20d?.txt", "a" * 255])
def test_a_direct_key_gives_its_path_back(path: str) -> None:
    key = BASE.direct_key(path)
    assert key == BASE.prefix + "f/" + path
    assert BASE.path_of(key) == path
    assert not BASE.is_hashed(key)


def test_a_hashed_key_holds_no_path_and_names_its_name_object() -> None:
    path = "/".join(["deep" * 50] * 5)  # 1,004 bytes
    hashed = BASE.hashed_key(path)
    assert hashed.startswith(BASE.prefix + "h/")
    assert len(hashed.rsplit("/", 1)[-1]) == 64
    assert len(hashed.encode()) < 200  # fits any store, whatever the path
    assert BASE.is_hashed(hashed)
    assert BASE.path_of(hashed) is None
    name = BASE.name_key(hashed)
    assert name == BASE.prefix + "n/" + hashed.rsplit("/", 1)[-1]
    assert not BASE.is_hashed(name)
    assert BASE.path_of(name) is None
    # each path its own key, the same path always the same key
    assert BASE.hashed_key(path) == hashed
    assert BASE.hashed_key(path + "x") != hashed
    assert OTHERS["another user"].hashed_key(path) != hashed
