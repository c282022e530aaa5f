"""What the flush catches (SPEC §4.5), in phrasings the benchmark does not use: preferences, profile facts
(name, city, role, family), decisions (the user's own, and proposals the other side agreed to), items asked to
be remembered named for their subject; and which existing entries it may take as saying the same fact by
meaning (``meaning_candidates``, ``closest``)."""

from __future__ import annotations

import pytest
from agentmem.adapters.embedded.wordllama_embedder import WordLlamaEmbedder
from agentmem.domain.conversations import Message
from agentmem.domain.flush import FactDraft, closest, extract_facts, meaning_candidates
from agentmem.domain.rules import check_name


def say(*rows: tuple[str, str]) -> list[Message]:
    return [Message(seq, seq, role, text, "2026-03-01T10:00:00Z")  # type: ignore[arg-type]
            for seq, (role, text) in enumerate(rows, 1)]


def drafts(*rows: tuple[str, str]) -> dict[str, FactDraft]:
    found = {d.name: d for d in extract_facts(say(*rows))}
    for name in found:
        check_name(name)
    return found


@pytest.mark.parametrize(("said", "name", "category"), [
    ("I eat no meat at all.", "preference-diet", "preference"),
    ("Please contact me by e-mail, I hate phone calls.", "preference-contact-channel", "preference"),
    ("Call me Teodora.", "profile-name", "user_profile"),
    ("I'm based in Gdansk these days.", "profile-location", "user_profile"),
    ("I work as a pharmacist.", "profile-job", "user_profile"),
    ("My husband is called Piet.", "profile-husband", "user_profile"),
    ("I have three children.", "profile-children", "user_profile"),
    ("We've settled on the cheaper courier.", "decision-cheaper-courier", "decision"),
])
def test_what_a_person_would_note_is_caught_with_a_name_for_its_subject(said: str, name: str, category: str) -> None:
    found = drafts(("user", said))
    assert name in found, found
    assert found[name].category == category and found[name].content.rstrip(".") in said


def test_a_remembered_item_without_is_is_named_for_its_subject_so_a_new_value_replaces_it() -> None:
    first = drafts(("user", "Please remember my badge 77-A1."))
    assert list(first) == ["remembered-badge"] and first["remembered-badge"].content.startswith("my badge 77-A1")

    later = drafts(("user", "Please remember my badge 77-A1."), ("assistant", "Noted."),
                   ("user", "Remember my new badge 90-C3."))
    assert list(later) == ["remembered-badge"] and "90-C3" in later["remembered-badge"].content


def test_a_city_that_changed_keeps_only_the_latest_under_one_name() -> None:
    found = drafts(("user", "I used to live in Gent but I moved to Utrecht."), ("assistant", "Nice."),
                   ("user", "Update: I'm now living in Aarhus."))
    assert [n for n in found if n.startswith("profile-")] == ["profile-location"]
    assert "Aarhus" in found["profile-location"].content and "Utrecht" not in found["profile-location"].content


def test_a_proposal_the_other_side_agreed_to_is_a_decision_and_one_left_hanging_is_not() -> None:
    agreed = drafts(("assistant", "Shall we ship the parcel by sea freight?"), ("user", "Yes, let's do that."))
    decided = [d.content for d in agreed.values() if d.category == "decision"]
    assert decided == ["Agreed: Ship the parcel by sea freight."]

    theirs = drafts(("user", "How about we meet on Thursday?"), ("assistant", "Sounds good, Thursday it is."))
    assert [d.category for d in theirs.values()] == ["decision"]
    assert "Thursday" in next(iter(theirs.values())).content

    hanging = drafts(("assistant", "Shall we ship the parcel by sea freight?"), ("user", "Hmm, what does it cost?"))
    assert not [d for d in hanging.values() if d.category == "decision"]
    alone = drafts(("assistant", "Let's go with the express option."), ("user", "What's the weather like?"))
    assert not alone  # an assistant's decision nobody agreed to is not the user's


def test_an_assistant_guess_about_the_user_is_not_a_fact() -> None:
    assert drafts(("assistant", "You live in Rome, I think."), ("user", "Tell me a joke.")) == {}


ENTRIES = {
    "diet": ("preference", "The user is vegetarian"),
    "preference-contact-channel": ("preference", "I prefer e-mail"),
    "profile-job": ("user_profile", "I work in Lisbon"),
    "remembered-door-code": ("fact", "my door code is 4512"),
    "allergies": ("user_profile", "Allergic to peanuts"),
    "decision-use-postgres": ("decision", "we decided to use Postgres"),
}


def test_meaning_is_compared_only_where_a_match_by_name_could_miss() -> None:
    # same category only; never a remembered item; never another subject the flush named
    assert meaning_candidates("preference-diet", "preference", ENTRIES) == ["diet"]
    assert meaning_candidates("profile-location", "user_profile", ENTRIES) == ["allergies"]
    assert meaning_candidates("remembered-locker-code", "fact", ENTRIES) == []
    assert meaning_candidates("decision-postgres-database", "decision", ENTRIES) == ["decision-use-postgres"]


def test_the_closest_entry_counts_only_past_the_threshold() -> None:
    embedder = WordLlamaEmbedder(256)
    new, near, far = embedder.embed(["I'm vegetarian", "The user is vegetarian", "Allergic to peanuts"])
    assert closest(new, {"diet": near, "allergies": far}, 0.8) == "diet"
    assert closest(new, {"allergies": far}, 0.8) is None
    assert closest(new, {}, 0.8) is None
