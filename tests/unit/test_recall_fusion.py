"""The fusion of recall's two lists (domain/recall.py): modes, calibration, the importance boost, the cut-off."""

from __future__ import annotations

import pytest
from agentmem.domain.errors import InvalidError
from agentmem.domain.recall import Calibration, Signals, check_min_score, check_mode, fuse, semantic_relevance

CAL = Calibration(floor=0.1, ceiling=0.6, keyword_weight=0.5, importance_boost=0.1, min_score=0.12)


def test_keyword_mode_keeps_every_keyword_match_in_the_keyword_order() -> None:
    candidates = {"a": Signals(keyword=3.0), "b": Signals(keyword=0.1), "c": Signals(semantic=0.9)}
    assert [k for k, _ in fuse(candidates, "keyword", CAL)] == ["a", "b"]  # the semantic-only one is no keyword hit


def test_hybrid_puts_what_both_sides_found_above_what_one_did() -> None:
    candidates = {"words": Signals(keyword=2.0, semantic=0.1), "both": Signals(keyword=2.0, semantic=0.5),
                  "meaning": Signals(semantic=0.55)}
    ranked = fuse(candidates, "hybrid", CAL)
    assert ranked[0][0] == "both" and {k for k, _ in ranked} == set(candidates)
    assert all(0 < score <= 1 for _, score in ranked)


def test_a_weak_semantic_match_is_not_padded_in() -> None:
    candidates = {"near": Signals(semantic=0.5), "unrelated": Signals(semantic=0.12)}
    assert [k for k, _ in fuse(candidates, "hybrid", CAL)] == ["near"]
    assert [k for k, _ in fuse(candidates, "semantic", CAL)] == ["near"]
    assert [k for k, _ in fuse(candidates, "semantic", CAL, min_score=0.0)] == ["near", "unrelated"]


def test_importance_breaks_what_is_otherwise_equal() -> None:
    candidates = {"low": Signals(keyword=1.0, semantic=0.4, importance=0.1),
                  "high": Signals(keyword=1.0, semantic=0.4, importance=0.9)}
    assert [k for k, _ in fuse(candidates, "hybrid", CAL)] == ["high", "low"]


def test_rrf_fusion_ranks_by_places_in_both_lists() -> None:
    rrf = Calibration(fusion="rrf", min_score=0.0)
    candidates = {"first-of-both": Signals(keyword=5.0, semantic=0.9), "second": Signals(keyword=4.0, semantic=0.8),
                  "only-words": Signals(keyword=4.5)}
    ranked = fuse(candidates, "hybrid", rrf)
    assert ranked[0][0] == "first-of-both" and ranked[0][1] == pytest.approx(1.0, abs=0.06)


def test_semantic_relevance_is_calibrated_between_floor_and_ceiling() -> None:
    assert semantic_relevance(0.05, CAL) == 0.0
    assert semantic_relevance(0.35, CAL) == pytest.approx(0.5)
    assert semantic_relevance(0.9, CAL) == 1.0


@pytest.mark.parametrize("value", ["auto", "HYBRID", ""])
def test_an_unknown_mode_is_refused(value: str) -> None:
    with pytest.raises(InvalidError):
        check_mode(value)
    assert check_mode(None) == "hybrid"


@pytest.mark.parametrize("value", [-0.01, 1.01, float("nan"), float("inf")])
def test_min_score_is_a_number_from_0_to_1(value: float) -> None:
    with pytest.raises(InvalidError):
        check_min_score(value)
    assert check_min_score(0.3) == 0.3
