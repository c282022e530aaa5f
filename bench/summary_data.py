"""Deterministic long conversations for the summary quality benchmark (``bench/summary_quality.py``).

:func:`make_conversation` is a pure function of a seed and a length (``random.Random``; nothing global,
nothing downloaded): filler between a user and an assistant on many topics, with items planted in it and
said in several ways each, by either side:

``remembered``     the user asks to remember a code, a name, a number ("…, remember that", "note that …"); the
                   same thing remembered again replaces it (its earlier values are stale);
``fact``           a fact about the user that changes over time (city, budget, deadline, employer, plan, team
                   size), stated by the user or confirmed by the assistant; each change makes the values
                   before it **stale**;
``preference``     diet, reply language, contact channel, seating, units (a later one of a topic replaces it);
``decision``       "we decided", "let's go with", "Agreed:", after a label, or a proposal the other side accepts;
``open_question``  a user question the assistant puts off, or an assistant question the user never answers;
``secret``         a key printed by a tool, a password said without asking to remember it, a token pasted
                   or echoed: never to be kept;
``answered``       a question answered at once (a distractor: it should not stay open).

Every planted item carries the **token** that shows it in a summary (a code, a value, a code name), unique
in the conversation; filler holds no digits and no planted word, so a token found means the item was kept.

    .venv/bin/python bench/summary_data.py --messages 200   # prints a sample and the counts
"""

from __future__ import annotations

import argparse
import random
import string
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

KINDS = ("remembered", "fact", "preference", "decision", "open_question", "secret", "answered")


@dataclass(frozen=True)
class Planted:
    kind: str
    seq: int  # the message that says it (journal seqs start at 1)
    token: str  # what shows it in a summary
    key: str = ""  # what a remembered item or a fact is about, a preference's topic
    stale: tuple[str, ...] = ()  # the values this one replaced


@dataclass
class Conversation:
    key: str
    messages: list[dict[str, Any]] = field(default_factory=list)  # role, content (+ tool fields)
    planted: list[Planted] = field(default_factory=list)

    def say(self, role: str, content: str, **extra: Any) -> int:
        self.messages.append({"role": role, "content": content, **extra})
        return len(self.messages)


# --- vocabularies (filler has no digits and none of the planted words) ---------------------------------------
TOPICS = (
    "the onboarding checklist", "the release calendar", "the support rota", "the office move logistics",
    "the quarterly review format", "the design system", "the incident playbook", "the hiring pipeline",
    "the customer survey", "the expense policy", "the training plan", "the documentation style guide",
    "the accessibility audit", "the partner programme", "the travel policy", "the analytics dashboard",
    "the mentoring scheme", "the holiday schedule", "the code review habits", "the print shop order",
)
ASK = ("Tell me about {t}.", "How does {t} work?", "Can you explain {t} briefly?", "What should I know about {t}?",
       "Walk me through {t}, please.", "Any tips on {t}?")
ANSWER = ("{T} works in short cycles, and each owner reviews it before the next step.",
          "{T} is simple: one list, one owner, and a short check at the end of each week.",
          "For {t}, the team keeps a shared page and updates it after every meeting.",
          "{T} mostly needs a named owner and a calendar reminder; the rest follows.")
THANKS = ("Thanks, that helps.", "Great, thank you.", "Got it, thanks!", "OK, makes sense.")
CITIES = ("Porto", "Lisbon", "Braga", "Coimbra", "Madrid", "Seville", "Valencia", "Lyon", "Nantes", "Ghent",
          "Utrecht", "Bergen", "Tampere", "Krakow", "Brno", "Graz", "Turin", "Bologna", "Bilbao", "Malaga")
ORGS = ("Northwind", "Contoso", "Fabrikam", "Initech", "Globex", "Umbrella", "Hooli", "Vandelay", "Stark",
        "Wayne", "Tyrell", "Cyberdyne", "Soylent", "Massive", "Acme")
PLANS = ("Starter", "Growth", "Scale", "Premier", "Enterprise", "Team", "Business", "Ultimate")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
CODENAMES = ("Kestrel", "Heron", "Osprey", "Falcon", "Plover", "Curlew", "Dunlin", "Merlin", "Petrel", "Tern",
             "Avocet", "Bittern", "Godwit", "Harrier", "Ibis", "Jacana", "Kittiwake", "Lapwing", "Nightjar",
             "Oriole", "Puffin", "Redstart", "Shrike", "Sandpiper", "Whimbrel", "Wryneck")
THINGS = ("parking spot", "gate code", "booking reference", "vendor id", "member number", "locker",
          "supplier contact", "wifi network", "badge number", "cabinet key tag")
PEOPLE = ("Ilse Marquardt", "Tomas Ribeiro", "Noor Haddad", "Yuki Tanabe", "Oskar Lind", "Amara Obi",
          "Lena Vogt", "Rafael Costa", "Mei Chen", "Jonas Berg")


class Maker:
    """One conversation's generator: its random source and the tokens used so far (each unique)."""

    def __init__(self, seed: int, key: str) -> None:
        self.rng = random.Random(seed)
        self.c = Conversation(key)
        self.used: set[str] = set()
        self.n = 0
        self.facts: dict[str, list[str]] = {}
        self.preferences: dict[str, list[str]] = {}
        self.memos: dict[str, list[str]] = {}
        self.codenames = list(CODENAMES)
        self.rng.shuffle(self.codenames)

    def unique(self, make: Any) -> str:
        while True:
            token = make()
            if token not in self.used:
                self.used.add(token)
                return str(token)

    def code(self, letters: int = 2, digits: int = 4) -> str:
        return self.unique(lambda: "".join(self.rng.choices(string.ascii_uppercase, k=letters)) + "-"
                           + "".join(self.rng.choices(string.digits, k=digits)))

    def codename(self) -> str:
        if self.codenames:
            return self.unique(self.codenames.pop)
        return self.unique(lambda: f"{self.rng.choice(CODENAMES)}-{self.rng.randint(2, 99)}")

    def plant(self, kind: str, seq: int, token: str, **extra: Any) -> None:
        self.c.planted.append(Planted(kind, seq, token, **extra))

    # --- filler -------------------------------------------------------------------------------------------
    def filler(self) -> None:
        topic = self.rng.choice(TOPICS)
        self.c.say("user", self.rng.choice(ASK).format(t=topic))
        self.c.say("assistant", self.rng.choice(ANSWER).format(t=topic, T=topic[0].upper() + topic[1:]))
        if self.rng.random() < 0.2:
            self.c.say("user", self.rng.choice(THANKS))
            self.c.say("assistant", "You're welcome.")

    # --- planted items ------------------------------------------------------------------------------------
    def remembered(self) -> None:
        thing = self.rng.choice(THINGS)
        value = self.rng.choice(PEOPLE) + " " + self.code(1, 3) if thing == "supplier contact" else self.code()
        before = self.memos.setdefault(thing, [])
        said = self.rng.choice((
            f"Please remember that the {thing} is {value}.",
            f"Note that my {thing} is {value}.",
            f"The {thing} is {value}, remember that.",
            f"Can you keep in mind that our {thing} is {value}?",
            f"Make a note of the {thing}: {value}.",
            f"Don't forget the new {thing}, it's {value}.",
        ))
        token = value.split()[-1]
        self.plant("remembered", self.c.say("user", said), token, key=thing, stale=tuple(before))
        before.append(token)
        self.c.say("assistant", self.rng.choice(("Noted.", "Got it, I'll keep that.", "Sure, noted.")))

    def fact(self) -> None:
        key = self.rng.choice(("location", "budget", "deadline", "employer", "plan", "team-size"))
        before = self.facts.get(key, [])
        value = self._value(key)
        said, by = self._fact_sentence(key, value, bool(before))
        if by == "assistant":
            self.c.say("user", self.rng.choice((f"Quick update on the {key.replace('-', ' ')}.",
                                                "One more thing for my file.")))
        self.plant("fact", self.c.say(by, said), value, key=key, stale=tuple(before))
        if by == "user":
            self.c.say("assistant", self.rng.choice(("Thanks for the update.", "Noted.", "Understood.")))
        self.facts[key] = [*before, value]

    def pick(self, pool: tuple[str, ...]) -> str:
        """One of ``pool`` not used yet (one with a number once all are)."""
        free = [item for item in pool if item not in self.used]
        if free:
            return self.unique(lambda: self.rng.choice(free))
        return self.unique(lambda: f"{self.rng.choice(pool)}{self.rng.randint(2, 99)}")

    def _value(self, key: str) -> str:
        r = self.rng
        if key == "location":
            return self.pick(CITIES)
        if key == "budget":
            return self.unique(lambda: f"{r.randint(11, 99)}k")
        if key == "deadline":
            return self.unique(lambda: f"{r.randint(1, 28)} {r.choice(MONTHS)}")
        if key == "employer":
            return self.pick(ORGS)
        if key == "plan":
            return self.pick(PLANS)
        return self.unique(lambda: f"{r.randint(3, 60)} people")

    def _fact_sentence(self, key: str, value: str, changed: bool) -> tuple[str, str]:
        old = self.facts[key][-1] if changed else ""
        r = self.rng
        first = {
            "location": (f"I live in {value}.", f"I'm based in {value}."),
            "budget": (f"Our budget is {value} for this project.", f"My budget is {value}."),
            "deadline": (f"Our deadline is {value}.", f"My deadline is {value}."),
            "employer": (f"I work at {value}.", f"I work for {value}."),
            "plan": (f"We're on the {value} plan.", f"I'm on the {value} plan."),
            "team-size": (f"Our team size is {value}.", f"My team size is {value}."),
        }
        change = {
            "location": (f"I moved from {old} to {value}.", f"I've relocated to {value}.", f"I'm now in {value}."),
            "budget": (f"We raised the budget to {value}.", f"The budget has changed to {value}.",
                       f"Our budget is now {value}."),
            "deadline": (f"We pushed the deadline to {value}.", f"The deadline has been moved to {value}.",
                         f"Our deadline is now {value}."),
            "employer": (f"I joined {value} this month.", f"I'm now working at {value}.",
                         f"I started working at {value}."),
            "plan": (f"We upgraded to the {value} plan.", f"We switched to the {value} tier.",
                     f"We moved from the {old} plan to the {value} plan."),
            "team-size": (f"Our team size is now {value}.", f"The team size went up to {value}."),
        }
        confirm = {
            "location": f"Noted: you're now based in {value}.",
            "budget": f"Noted, your budget is now {value}.",
            "deadline": f"Understood: your deadline is now {value}.",
            "employer": f"Got it, you now work at {value}.",
            "plan": f"Done: you're now on the {value} plan.",
            "team-size": f"Noted, your team size is now {value}.",
        }
        if changed and r.random() < 0.25:
            return confirm[key], "assistant"
        return r.choice(change[key] if changed else first[key]), "user"

    def preference(self) -> None:
        topic = self.rng.choice(("diet", "language", "contact", "seating", "units"))
        options = {
            "diet": (("I'm vegetarian.", "vegetarian"), ("I don't eat fish.", "fish"), ("I'm vegan now.", "vegan")),
            "language": (("Please answer in German from now on.", "German"), ("From now on, reply in Dutch.", "Dutch"),
                         ("Can you reply in Italian?", "Italian")),
            "contact": (("I'd rather be contacted by SMS.", "SMS"), ("I prefer WhatsApp over email.", "WhatsApp"),
                        ("Please always contact me on Slack.", "Slack")),
            "seating": (("I prefer aisle seats.", "aisle"), ("I'd rather sit by the window seat.", "window")),
            "units": (("Always use metric units.", "metric"), ("I prefer imperial units.", "imperial")),
        }
        said, token = self.rng.choice(options[topic])
        if token in self.used:
            return self.filler()
        self.used.add(token)
        before = self.preferences.setdefault(topic, [])
        self.plant("preference", self.c.say("user", said), token, key=topic, stale=tuple(before))
        before.append(token)
        self.c.say("assistant", self.rng.choice(("Noted.", "Of course.", "Sure, I'll keep to that.")))

    def decision(self) -> None:
        name = self.codename()
        action = self.rng.choice((f"migrate the {name} service first", f"ship the {name} beta on a Monday",
                                  f"use {name} for the billing export", f"archive the {name} repository",
                                  f"run the {name} pilot with two teams"))
        form = self.rng.randrange(6)
        if form == 0:
            label = self.rng.choice(("Recap", "Summary of the call", "Update", f"Item {self.rng.randint(2, 9)}"))
            self.c.say("user", f"Where did we land on {name}?")
            seq = self.c.say("assistant", f"{label}: we decided to {action}.")
        elif form == 1:
            seq = self.c.say("user", self.rng.choice((f"Let's go with {name} for the export.",
                                                      f"OK, we'll use {name} for the export.",
                                                      f"Alright, we settled on {name}.")))
            self.c.say("assistant", "Great, I'll note it.")
        elif form == 2:
            self.c.say("user", f"What did the team agree on {name}?")
            seq = self.c.say("assistant", f"We agreed to {action}.")
        elif form == 3:
            seq = self.c.say("assistant", self.rng.choice((f"Shall we {action}?", f"How about we {action}?")))
            self.c.say("user", self.rng.choice(("Yes, let's do that.", "Sounds good to me.", "Perfect, go ahead.")))
        elif form == 4:
            seq = self.c.say("user", f"Decision: we {action}.")
            self.c.say("assistant", "Recorded.")
        else:
            seq = self.c.say("user", f"We've decided to {action}.")
            self.c.say("assistant", "Makes sense.")
        self.plant("decision", seq, name)

    def open_question(self) -> None:
        name = self.codename()
        if self.rng.random() < 0.6:
            seq = self.c.say("user", self.rng.choice((
                f"Does the {name} warranty cover accidental damage?",
                f"Is the {name} licence transferable to a contractor?",
                f"When does the {name} contract renew?",
                f"Who signs off the {name} invoices?",
            )))
            self.c.say("assistant", self.rng.choice((
                "Good question, I need to check with the legal team and get back to you.",
                "I'm not sure yet; let me find out.",
                "I don't have that information right now, I'll ask around.",
            )))
        else:
            self.c.say("user", f"I'd like to set up {name} soon.")
            seq = self.c.say("assistant", self.rng.choice((
                f"Which region should host {name}?",
                f"How many seats will {name} need in the first year?",
                f"Who should own the {name} rollout on your side?",
            )))
            topic = self.rng.choice(TOPICS)
            self.c.say("user", f"Before that, walk me through {topic} and the usual pitfalls people hit with it.")
            self.c.say("assistant", self.rng.choice(ANSWER).format(t=topic, T=topic[0].upper() + topic[1:]))
        self.plant("open_question", seq, name)

    def answered(self) -> None:
        name = self.codename()
        seq = self.c.say("user", f"How long does the {name} export take to finish?")
        self.c.say("assistant", f"The {name} export takes about an hour to finish, overnight runs included.")
        self.plant("answered", seq, name)

    def secret(self) -> None:
        r = self.rng
        form = r.randrange(4)
        if form == 0:
            key = "AKIA" + "".join(r.choices(string.ascii_uppercase + string.digits, k=16))
            printed = f"[default]\naws_access_key_id = {key}\nregion = eu-west-1"
            self.c.say("user", "Which AWS profile does the build box use?")
            self.c.say("tool_call", "", tool_name="shell", tool_call_id=f"call-{len(self.c.messages)}",
                       arguments={"command": "cat ~/.aws/credentials"})
            seq = self.c.say("tool_result", printed, tool_call_id=f"call-{len(self.c.messages) - 1}",
                             result={"stdout": printed, "exit_code": 0})
            self.c.say("assistant", "It uses the default profile, in eu-west-1.")
        elif form == 1:
            key = "Qz" + "".join(r.choices(string.ascii_letters + string.digits, k=8)) + "!7"
            seq = self.c.say("user", f"The admin password is {key}, can you log in and check the queue?")
            self.c.say("assistant", "Logged in; the queue is empty.")
        elif form == 2:
            key = "ghp_" + "".join(r.choices(string.ascii_letters + string.digits, k=36))
            seq = self.c.say("user", f"Here is the deploy token: {key}")
            self.c.say("assistant", "Thanks, the deploy went through.")
        else:
            key = "AKIA" + "".join(r.choices(string.ascii_uppercase + string.digits, k=16))
            self.c.say("user", "Which key did the deploy user get?")
            seq = self.c.say("assistant", f"The tool printed the access key {key} for the deploy user.")
        self.used.add(key)
        self.plant("secret", seq, key)


WEIGHTS = (("filler", 58), ("remembered", 5), ("fact", 6), ("preference", 2), ("decision", 9),
           ("open_question", 5), ("answered", 5), ("secret", 5))


def make_conversation(seed: int, messages: int, key: str = "long") -> Conversation:
    """A conversation of about ``messages`` messages (whole turns), its items planted as it goes."""
    maker = Maker(seed, key)
    names = [name for name, _ in WEIGHTS]
    weights = [weight for _, weight in WEIGHTS]
    maker.c.say("user", "Hi! I'm starting a new project and want your help keeping track of it.")
    maker.c.say("assistant", "Happy to help. Tell me what you need.")
    while len(maker.c.messages) < messages:
        getattr(maker, maker.rng.choices(names, weights)[0])()
    return maker.c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--messages", type=int, default=200)
    args = parser.parse_args()
    c = make_conversation(args.seed, args.messages)
    for m in c.messages[:40]:
        print(f"{m['role']:>11}: {m['content'][:110]}")
    print(len(c.messages), "messages;", dict(Counter(p.kind for p in c.planted)))


if __name__ == "__main__":
    main()
