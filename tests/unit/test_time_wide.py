"""How wide a time-bounded query searches a journal's graph (adapters/embedded/vector_index.py ``time_wide``)."""

from __future__ import annotations

import pytest

vector_index = pytest.importorskip("agentmem.adapters.embedded.vector_index")


@pytest.mark.parametrize(("k", "within", "size", "wide"), [
    (100, 1_000_000, 2_000_000, 600),  # the newer half of a journal: 3 × k / 0.5
    (100, 500_000, 2_000_000, 1_200),  # a quarter
    (100, 20_001, 2_000_000, 2_000),  # a hundredth: at most 20 × k, as before
    (10, 500_000, 1_000_000, 200),  # few wanted: at least 200
    (100, 100, 150, 150),  # never more than the graph holds
    (100, 300, 300, 300),  # (the window is all of it)
])
def test_a_time_bounded_query_asks_the_graph_for_what_would_hold_three_times_its_rows_of_the_window(
    k: int, within: int, size: int, wide: int,
) -> None:
    assert vector_index.time_wide(k, within, size) == wide
