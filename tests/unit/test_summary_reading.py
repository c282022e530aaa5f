"""What the extractive summary catches from both sides of a conversation (SPEC §4.3): decisions, agreements,
facts the assistant confirms, questions either side left open, the latest value of a fact, remembered items
kept whole, secrets left out, and a bounded size with the most important lines kept.

Fake credentials are assembled from pieces so that secret scanners do not flag this file.
"""

from __future__ import annotations

import pytest
from agentmem.domain import statements
from agentmem.domain.statements import assistant_statements, user_statements
from agentmem.domain.summary import (
    ASKED_OF_THE_USER,
    HARD_MAX_CHARS,
    HARD_MAX_TOKENS,
    SUMMARY_MAX_TOKENS,
    ExtractiveSummariser,
    summary_tokens,
)
from test_summary import conversation, section

GITHUB_TOKEN = "ghp_" + "Qw3rTy7uI9oP1aS2dF4g" * 2


def summarise(*rows: tuple[str, str], previous: str | None = None, **options: int) -> str:
    return ExtractiveSummariser(**options).summarise(previous, conversation(list(rows)))


# -- remembered items, whole ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("Remember my new code 5521 and my email ana@example.com",
         "my new code 5521 and my email ana@example.com"),
        ("Please remember that the gate PIN is 0042 and the alarm word is heron.",
         "the gate PIN is 0042 and the alarm word is heron."),
        ("Don't forget: locker 14, and my bike lock is 3-9-1.", "locker 14, and my bike lock is 3-9-1."),
    ],
)
def test_a_remembered_item_keeps_every_value_the_sentence_asked_to_keep(said: str, kept: str) -> None:
    assert f"- {kept}" in section(summarise(("user", said)), "Remembered")


# -- decisions from both sides, and agreements -----------------------------------------------------------------
def test_decisions_the_assistant_states_are_kept_even_after_a_label() -> None:
    rows = []
    for n in range(1, 41):
        rows += [("user", f"What about service {n}?"),
                 ("assistant", f"Topic {n}: we decided to move service {n} first.")]
    decisions = section(summarise(*rows), "Decisions")
    assert "- Topic 40: we decided to move service 40 first." in decisions
    assert decisions.count("\n- ") + decisions.startswith("- ") >= 20  # the newest of them, bounded


@pytest.mark.parametrize(
    "said",
    [
        "OK, we've settled on the blue logo.",
        "Final decision: the offsite is in Braga.",
        "We'll stick with weekly invoices.",
        "Decided — two reviewers per pull request.",
    ],
)
def test_ways_either_side_records_a_decision(said: str) -> None:
    assert [s.kind for s in user_statements(said)] == ["decision"]
    assert [s.kind for s in assistant_statements(said)] == ["decision"]


def test_a_proposal_the_other_side_agrees_to_is_a_decision_and_one_it_refuses_is_not() -> None:
    summary = summarise(
        ("assistant", "Shall we ship the beta to the Lisbon team on Thursday?"),
        ("user", "Yes, sounds good."),
        ("user", "How about we move the standup to 9:30?"),
        ("assistant", "Works for me, I'll update the invite."),
        ("assistant", "Should we drop the legacy exporter?"),
        ("user", "No, not yet: two customers still use it."),
    )
    decisions = section(summary, "Decisions")
    assert "Agreed: Ship the beta to the Lisbon team on Thursday." in decisions
    assert "Agreed: We move the standup to 9:30." in decisions
    assert "legacy exporter" not in decisions
    assert "sounds good" not in section(summary, "Recent topics")  # a yes is no topic of its own


def test_what_the_assistant_says_it_has_done_is_kept() -> None:
    decisions = section(summarise(("user", "Please book me the 9:00 slot on Tuesday."),
                                  ("assistant", "Done: I've booked the 9:00 slot on Tuesday for you.")), "Decisions")
    assert "Done: I've booked the 9:00 slot on Tuesday for you." in decisions


# -- facts: both sides, the latest value -----------------------------------------------------------------------
def test_facts_the_assistant_confirms_are_facts_but_its_guesses_are_not() -> None:
    facts = section(summarise(
        ("user", "Can you check my account?"),
        ("assistant", "You're on the Team plan, billed yearly."),
        ("assistant", "Noted: your deadline is now Friday."),
        ("assistant", "If your budget is 20k, the premium tier fits."),
    ), "Facts")
    assert "- plan: You're on the Team plan, billed yearly." in facts
    assert "- deadline: your deadline is now Friday." in facts
    assert "budget" not in facts


def test_a_fact_that_changed_keeps_its_latest_value_only_and_the_old_one_goes_everywhere() -> None:
    summary = summarise(
        ("user", "I live in Porto."),
        ("user", "Can you find coworking spaces in Porto near the river?"),
        ("user", "Our budget is 40k for the year."),
        ("user", "I moved from Porto to Lisbon in June."),
        ("user", "The budget has changed to 55k."),
    )
    facts = section(summary, "Facts")
    assert "- location: I moved to Lisbon in June." in facts
    assert "- budget: The budget has changed to 55k." in facts
    assert "Porto" not in summary and "40k" not in summary


@pytest.mark.parametrize(
    ("said", "key"),
    [
        ("I'm vegan.", "preference-diet"),
        ("I don't eat pork.", "preference-diet"),
        ("I'm allergic to peanuts.", "allergies"),
        ("I love jazz.", "preference-jazz"),
        ("My favourite airline is TAP.", "preference-favourite-airline"),
        ("I'd rather get a call than an email.", "preference-contact-channel"),
        ("I'm Ana Lima.", "name"),
        ("I'm a data engineer at Globex.", "job"),
        ("I'm now in Madrid.", "location"),
        ("The kickoff has been moved to May 12.", "kickoff"),
        ("We pushed the launch to next Tuesday.", "launch"),
    ],
)
def test_preferences_and_profile_facts_a_person_states(said: str, key: str) -> None:
    [stated] = user_statements(said)
    assert stated.key == key


@pytest.mark.parametrize("said", ["I'm fine.", "I love that idea.", "I'm now in a meeting.", "The weather is nice."])
def test_what_is_no_fact(said: str) -> None:
    assert all(s.kind not in ("profile", "preference", "fact") for s in user_statements(said))


# -- open questions, either side -------------------------------------------------------------------------------
def test_a_question_the_assistant_asked_stays_open_until_the_user_replies() -> None:
    asked = ("assistant", "Which region should we deploy the staging stack to?")
    ignored = summarise(asked, ("user", "Tell me more about the venues first and the parking situation there."))
    assert f"- {ASKED_OF_THE_USER}Which region should we deploy the staging stack to?" in \
        section(ignored, "Open questions")
    answered = summarise(asked, ("user", "eu-west-1 please"))
    assert "region" not in section(answered, "Open questions")
    later = summarise(("user", "Tell me about the runbooks, the alerts and the on-call rota in detail."),
                      previous=ignored)
    assert "region" in section(later, "Open questions")
    closed = summarise(("user", "For the staging stack, use the Frankfurt region."), previous=later)
    assert "region" not in section(closed, "Open questions")


def test_an_assistant_question_that_asks_nothing_is_not_kept() -> None:
    summary = summarise(("user", "Thanks for the report."), ("assistant", "Anything else I can help you with?"))
    assert section(summary, "Open questions").strip() == "(none)"


def test_a_question_the_assistant_put_off_stays_open() -> None:
    summary = summarise(("user", "Does the warranty cover accidental water damage?"),
                        ("assistant", "Good question, I'd have to check with the insurer first."))
    assert "warranty cover accidental water damage" in section(summary, "Open questions")


# -- secrets ----------------------------------------------------------------------------------------------------
def test_a_secret_said_in_words_is_left_out_but_one_asked_to_be_remembered_is_kept() -> None:
    summary = summarise(
        ("user", "The admin password is Xyz!234q, can you log in and reset the cache?"),
        ("user", f"the staging token is {GITHUB_TOKEN}"),
        ("assistant", "Logged in with the admin password Xyz!234q."),
        ("user", "Remember the safe combination is 12-34-56."),
    )
    assert "Xyz!234q" not in summary and GITHUB_TOKEN not in summary
    assert "- the safe combination is 12-34-56." in section(summary, "Remembered")


# -- size -------------------------------------------------------------------------------------------------------
def test_a_year_long_conversation_keeps_a_bounded_summary_with_the_most_important_lines() -> None:
    rows: list[tuple[str, str]] = [("user", "My name is Ana Lima."), ("user", "Please always reply in Portuguese.")]
    for day in range(365):
        rows += [
            ("user", f"Remember that the code for locker {day} is L{day:03d}."),
            ("user", f"Our quota for region {day} is {day * 10} units."),
            ("assistant", f"We agreed to review region {day} on day {day} of the plan."),
            ("user", f"What is the latency budget for region {day} in the peak hours of the winter season?"),
            ("user", f"Tell me about the storage tiers of cluster number {day} in the eastern datacentre."),
        ]
    summary = summarise(*rows)
    assert summary_tokens(summary) <= HARD_MAX_TOKENS and len(summary) <= HARD_MAX_CHARS
    budget = "\n".join(section(summary, title) for title in ("Facts", "Decisions", "Open questions", "Recent topics"))
    assert summary_tokens(budget) <= SUMMARY_MAX_TOKENS + 10
    facts = section(summary, "Facts")
    assert facts.startswith("- name: My name is Ana Lima.\n- preference-reply-language:")  # profile first
    assert "the code for locker 364 is L364." in summary  # the newest remembered items stay
    assert "(left out for length:" in section(summary, "Remembered")  # and what went is counted
    # and a tighter budget cuts topics, questions and other facts before the profile
    small = summarise(*rows, max_tokens=120)
    assert section(small, "Facts").startswith("- name: My name is Ana Lima.")
    assert section(small, "Recent topics").strip() == "(none)"


def test_a_question_the_assistant_ended_a_pass_on_is_answered_by_the_reply_the_next_pass_reads() -> None:
    # Given a pass that ends on the assistant's question (the user's reply is still in the window)
    first = [("user", "Let's plan the archive move."), ("assistant", "Which storage class do you want for it?")]
    then = [("user", "Glacier, please."), ("assistant", "Glacier it is.")]
    before = summarise(*first)
    assert "awaiting a reply: Which storage class do you want for it?" in section(before, "Open questions")
    # When the next pass reads the reply
    after = ExtractiveSummariser().summarise(before, conversation(then, start=3))
    # Then the question is answered, as one pass over both would have it
    assert "storage class" not in section(after, "Open questions")
    assert after == summarise(*first, *then)


def test_a_message_read_again_says_the_same_and_a_caller_changing_its_list_changes_nothing_kept() -> None:
    said = "I moved to Lisbon last spring. Please remember my locker code 4471. Forget my old address."
    first = statements.user_statements(said)
    first.clear()  # (a caller's list is its own)
    again = statements.user_statements(said)
    assert [st.kind for st in again] == [st.kind for st in statements._user_statements(said)]
    assert again and again == list(statements._user_statements(said))
    decided = "We decided to ship on Friday. I have updated the ticket."
    assert statements.assistant_statements(decided) == list(statements._assistant_statements(decided))
    # a message longer than what is kept is read each time, the same way
    long = said + " " + "The weather was fine. " * (statements.STATEMENTS_KEPT_CHARS // 20)
    assert statements.user_statements(long) == list(statements._user_statements(long))
