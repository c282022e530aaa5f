"""The single table's key layout: list order from the by_layer_updated sort key, and keys that read back."""

from __future__ import annotations

import random

from agentmem.adapters.aws.dynamodb import layout
from agentmem.domain.models import Layer


def test_the_listing_key_read_backwards_gives_newest_first_then_names_a_to_z() -> None:
    # Given entries whose times tie, with names that start one another and use every name character
    names = ["a", "a-b", "a.b", "a0", "a9", "a_b", "ab", "abc", "b", "z", "0", "9", "-", ".", "_", "refund-policy"]
    times = ["2026-03-02T09:00:00.000000Z", "2026-03-02T09:00:00.000001Z"]
    rows = [(t, n) for t in times for n in names]
    random.Random(7).shuffle(rows)

    # When they are sorted by their listing key, highest first (a descending index read)
    by_key = sorted(rows, key=lambda row: layout.listing_sk(*row), reverse=True)

    # Then they come newest first, and within one time by name ascending, as the embedded store lists them
    assert by_key == sorted(rows, key=lambda row: (-times.index(row[0]), row[1]))


def test_a_layer_key_names_its_layer() -> None:
    # Given the account layer and a user layer whose user id is "-" (a valid user id)
    for layer in (Layer("acct_1", "company", None), Layer("acct_1", "agent:bot", "-"), Layer("a", "m", "ana@x:1")):
        # When its partition key is made and read back
        # Then it names the same layer, and the account layer never shares a key with a user's
        assert layout.parse_layer_pk(layout.layer_pk(layer)) == layer
    assert layout.layer_pk(Layer("a", "m", None)) != layout.layer_pk(Layer("a", "m", "L"))


def test_usage_keys_read_back() -> None:
    day = "2026-03-02"
    assert layout.usage_parts(layout.usage_sk(day, "entries.save", True)) == (day, "entries.save", True)
    assert layout.usage_parts(layout.usage_sk(day, "tool#x", False)) == (day, "tool#x", False)
