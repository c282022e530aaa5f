"""``iso`` is the one way the service writes a time: UTC, microseconds, a Z, sortable as text."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

from agentmem.domain.clock import iso, parse_iso


def test_iso_writes_utc_with_microseconds_and_a_z_whatever_the_offset() -> None:
    # Given times with and without microseconds, in several offsets
    rng = random.Random(15)
    moments = [datetime(2026, 12, 2, 11, 0, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)]
    moments += [(datetime(2000, 1, 1, tzinfo=UTC) + timedelta(microseconds=rng.randrange(10**17)))
                .astimezone(timezone(timedelta(minutes=rng.randrange(-900, 900)))) for _ in range(5000)]
    for moment in moments:
        # When it is written, Then it reads as the strftime format always has, and back as the same instant
        text = iso(moment)
        assert text == moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert len(text) == 27 and text.endswith("Z") and parse_iso(text) == moment


def test_iso_sorts_as_the_times_do() -> None:
    rng = random.Random(16)
    moments = [datetime(2026, 1, 1, tzinfo=UTC) + timedelta(microseconds=rng.randrange(10**14)) for _ in range(2000)]
    assert sorted(moments) == sorted(moments, key=iso)


def test_parse_iso_reads_what_iso_writes_as_the_general_reading_does() -> None:
    # Given times written by iso (microseconds zero or not), and texts of that length that are not iso's
    rng = random.Random(17)
    texts = [iso(datetime(2000, 1, 1, tzinfo=UTC) + timedelta(microseconds=rng.randrange(10**17)))
             for _ in range(3000)]
    texts += [iso(datetime(2026, 12, 2, 11, 0, tzinfo=UTC)), "2016-12-31T23:59:60.000000Z",
              "2026-12-02 11:00:00.000001Z", "2026-12-02T11:00:00,000001Z"]
    for text in texts:
        # When each is read, Then it is the instant the general reading gives, in UTC
        general = parse_iso(text.replace("Z", "+00:00"))  # (an offset: never the reading of iso's shape)
        moment = parse_iso(text)
        assert moment == general and moment.utcoffset() == timedelta(0) and moment.tzinfo == UTC
    assert parse_iso("2016-12-31T23:59:60.000000Z") == datetime(2017, 1, 1, tzinfo=UTC)  # a leap second
