"""The embedded backend's expiring links (agentmem.adapters.embedded.links): HMAC over method, key, expiry,
size and file name. A link works until it expires, only for its method and only as it was signed."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest
from agentmem.adapters.embedded.links import LINK_ROOT, SECRET_FILE, LinkRefusedError, LinkSigner, load_secret

SECRET = bytes(range(32))
NOW = 1_780_000_000.0  # a moment in 2026, in epoch seconds
KEY = "w/0123456789abcdef/0123456789abcdef/0123456789abcdef/0123456789abcdef/f/reports/q3 final.csv"


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def split(url: str) -> tuple[str, dict[str, str]]:
    """A link's key and query, as the server reads them."""
    parts = urlsplit(url)
    assert parts.path.startswith(LINK_ROOT)
    return unquote(parts.path[len(LINK_ROOT):]), dict(parse_qsl(parts.query, keep_blank_values=True))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def signer(clock: Clock) -> LinkSigner:
    return LinkSigner(SECRET, clock=clock)


def refused(signer: LinkSigner, method: str, key: str, query: dict[str, str]) -> LinkRefusedError:
    with pytest.raises(LinkRefusedError) as refusal:
        signer.verify(method, key, query)
    assert refusal.value.status == 403
    assert refusal.value.code == "forbidden"
    return refusal.value


# -- what a link looks like ----------------------------------------------------------------------------------
def test_a_link_is_relative_without_a_base_url_and_carries_its_terms(signer: LinkSigner) -> None:
    url = signer.sign(KEY, method="GET", expires_in_s=3600, filename="q3 final.csv")
    assert url.startswith("/v1/links/w/")
    key, query = split(url)
    assert key == KEY
    assert query["method"] == "GET"
    assert query["expires"] == str(int(NOW) + 3600)
    assert query["filename"] == "q3 final.csv"
    assert "size" not in query
    assert len(query["signature"]) == 64 and int(query["signature"], 16) >= 0
    assert " " not in url


def test_a_link_starts_with_the_base_url_when_there_is_one(clock: Clock) -> None:
    signer = LinkSigner(SECRET, base_url="http://127.0.0.1:8080/", clock=clock)
    url = signer.sign("a/b.txt", method="PUT", expires_in_s=60, size=5)
    assert url.startswith("http://127.0.0.1:8080/v1/links/a/b.txt?")
    key, query = split(url)
    assert key == "a/b.txt"
    assert (query["method"], query["size"], query["expires"]) == ("PUT", "5", str(int(NOW) + 60))
    assert "filename" not in query


@pytest.mark.parametrize("key", ["a/résumé.pdf", "a/100%/x?y#z&w=1.txt", "a/日本/😀.png", "a/plus+and=.txt"])
def test_keys_with_any_characters_come_back_as_they_were(signer: LinkSigner, key: str) -> None:
    url = signer.sign(key, method="GET", expires_in_s=60, filename=key.rsplit("/", 1)[-1])
    parsed_key, query = split(url)
    assert parsed_key == key
    assert signer.verify("GET", parsed_key, query).key == key


# -- a fresh link verifies ------------------------------------------------------------------------------------
def test_a_fresh_download_link_verifies_for_get_and_head(signer: LinkSigner, clock: Clock) -> None:
    key, query = split(signer.sign(KEY, method="GET", expires_in_s=3600, filename="q3 final.csv"))
    for method in ("GET", "HEAD"):
        link = signer.verify(method, key, query)
        assert (link.key, link.method, link.expires, link.size, link.filename) == (
            KEY, "GET", int(NOW) + 3600, None, "q3 final.csv")
    # and still does one second before it expires
    clock.now = NOW + 3599
    assert signer.verify("GET", key, query).key == KEY


def test_a_fresh_upload_link_verifies_for_put_with_its_size(signer: LinkSigner) -> None:
    key, query = split(signer.sign(KEY, method="PUT", expires_in_s=60, size=1234))
    link = signer.verify("PUT", key, query)
    assert (link.method, link.size, link.filename) == ("PUT", 1234, None)
    # a zero-byte upload is a size too
    key, query = split(signer.sign(KEY, method="PUT", expires_in_s=60, size=0))
    assert signer.verify("PUT", key, query).size == 0


def test_a_second_signer_with_the_same_secret_agrees(signer: LinkSigner, clock: Clock) -> None:
    key, query = split(signer.sign(KEY, method="GET", expires_in_s=60))
    assert LinkSigner(SECRET, clock=clock).verify("GET", key, query).key == KEY


# -- expired ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("late_by", [0, 0.001, 1, 86_400 * 365])
def test_an_expired_link_is_refused(signer: LinkSigner, clock: Clock, late_by: float) -> None:
    key, query = split(signer.sign(KEY, method="GET", expires_in_s=60))
    clock.now = NOW + 60 + late_by  # at the expiry second itself, or after
    assert "expired" in refused(signer, "GET", key, query).message


# -- altered -----------------------------------------------------------------------------------------------------
def test_a_tampered_signature_is_refused(signer: LinkSigner) -> None:
    key, query = split(signer.sign(KEY, method="GET", expires_in_s=60))
    flipped = ("0" if query["signature"][0] != "0" else "1") + query["signature"][1:]
    refused(signer, "GET", key, {**query, "signature": flipped})
    refused(signer, "GET", key, {**query, "signature": query["signature"].upper()})
    refused(signer, "GET", key, {**query, "signature": query["signature"][:-1]})
    refused(signer, "GET", key, {**query, "signature": ""})
    # not hex at all: characters outside ASCII (a 403 like any other, never a failure of the server)
    refused(signer, "GET", key, {**query, "signature": "ø«" + query["signature"][2:]})
    refused(signer, "GET", key, {**query, "signature": "\udcff"})


def test_a_later_expiry_is_refused(signer: LinkSigner, clock: Clock) -> None:
    key, query = split(signer.sign(KEY, method="GET", expires_in_s=60))
    refused(signer, "GET", key, {**query, "expires": str(int(query["expires"]) + 86_400)})
    refused(signer, "GET", key, {**query, "expires": str(int(query["expires"]) - 1)})
    # even when the link has expired, a new expiry does not bring it back
    clock.now = NOW + 120
    refused(signer, "GET", key, {**query, "expires": str(int(NOW) + 3600)})


def test_another_key_is_refused(signer: LinkSigner) -> None:
    _, query = split(signer.sign(KEY, method="GET", expires_in_s=60))
    for other in (KEY.replace("q3", "q4"), KEY + "x", KEY.rsplit("/", 1)[0] + "/secret.txt", KEY[:-1], "a"):
        refused(signer, "GET", other, query)


def test_a_download_link_does_not_upload_and_an_upload_link_does_not_download(signer: LinkSigner) -> None:
    key, download = split(signer.sign(KEY, method="GET", expires_in_s=60))
    for method in ("PUT", "POST", "DELETE", "get"):
        assert "for GET" in refused(signer, method, key, download).message
    key, upload = split(signer.sign(KEY, method="PUT", expires_in_s=60, size=3))
    for method in ("GET", "HEAD", "DELETE"):
        assert "for PUT" in refused(signer, method, key, upload).message


def test_a_rewritten_method_is_refused(signer: LinkSigner) -> None:
    key, download = split(signer.sign(KEY, method="GET", expires_in_s=60))
    refused(signer, "PUT", key, {**download, "method": "PUT"})
    refused(signer, "PUT", key, {**download, "method": "PUT", "size": "3"})
    key, upload = split(signer.sign(KEY, method="PUT", expires_in_s=60, size=3))
    refused(signer, "GET", key, {**upload, "method": "GET"})


def test_a_changed_size_is_refused(signer: LinkSigner) -> None:
    key, query = split(signer.sign(KEY, method="PUT", expires_in_s=60, size=1000))
    for size in ("1001", "999", "0", "1000000000", "-1000"):
        refused(signer, "PUT", key, {**query, "size": size})
    without = {k: v for k, v in query.items() if k != "size"}
    refused(signer, "PUT", key, without)
    # and a size added to a link signed without one
    key, download = split(signer.sign(KEY, method="GET", expires_in_s=60))
    refused(signer, "GET", key, {**download, "size": "5"})


def test_a_changed_file_name_is_refused(signer: LinkSigner) -> None:
    key, query = split(signer.sign(KEY, method="GET", expires_in_s=60, filename="q3.csv"))
    refused(signer, "GET", key, {**query, "filename": "invoice.exe"})
    refused(signer, "GET", key, {k: v for k, v in query.items() if k != "filename"})
    key, plain = split(signer.sign(KEY, method="GET", expires_in_s=60))
    refused(signer, "GET", key, {**plain, "filename": "evil.html"})


@pytest.mark.parametrize("missing", ["method", "expires", "signature"])
def test_a_link_missing_a_part_is_refused(signer: LinkSigner, missing: str) -> None:
    key, query = split(signer.sign(KEY, method="GET", expires_in_s=60))
    refused(signer, "GET", key, {k: v for k, v in query.items() if k != missing})


@pytest.mark.parametrize(("name", "value"), [("expires", "soon"), ("expires", ""), ("size", "ten"), ("size", "")])
def test_a_link_with_a_part_that_is_not_a_number_is_refused(signer: LinkSigner, name: str, value: str) -> None:
    key, query = split(signer.sign(KEY, method="PUT", expires_in_s=60, size=10))
    refused(signer, "PUT", key, {**query, name: value})


def test_no_query_at_all_is_refused(signer: LinkSigner) -> None:
    refused(signer, "GET", KEY, {})


def test_another_secret_refuses_the_link(signer: LinkSigner, clock: Clock) -> None:
    key, query = split(signer.sign(KEY, method="GET", expires_in_s=60))
    other = LinkSigner(bytes(reversed(SECRET)), clock=clock)
    refused(other, "GET", key, query)
    # and links the other one signs are refused here
    key, theirs = split(other.sign(KEY, method="GET", expires_in_s=60))
    refused(signer, "GET", key, theirs)


# -- the secret ------------------------------------------------------------------------------------------------
def test_load_secret_makes_one_private_secret_per_data_dir_and_keeps_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"  # not there yet
    first = load_secret(data_dir)
    path = data_dir / SECRET_FILE
    assert path.is_file()
    assert len(first) == 32
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # the second call (another process, a restart) reads the same one
    assert load_secret(data_dir) == first
    assert bytes.fromhex(path.read_text().strip()) == first
    # another data dir has its own
    other = load_secret(tmp_path / "elsewhere")
    assert other != first
    # so a link signed by one data dir's server is refused by the other's
    clock = Clock()
    key, query = split(LinkSigner(first, clock=clock).sign(KEY, method="GET", expires_in_s=60))
    assert LinkSigner(load_secret(data_dir), clock=clock).verify("GET", key, query).key == KEY
    refused(LinkSigner(other, clock=clock), "GET", key, query)


def test_load_secret_refuses_an_empty_secret_file(tmp_path: Path) -> None:
    (tmp_path / SECRET_FILE).write_text("")
    with pytest.raises(OSError, match="empty"):
        load_secret(tmp_path)
