"""Deterministic data for the recall quality benchmark (``bench/recall_quality.py``).

Two datasets, each a pure function of a seed (``random.Random(seed)``; nothing global, nothing downloaded):

* :func:`make_conversations` — a long multi-session chat between one user and an assistant: filler
  chit-chat from many topics, and facts planted across the sessions about the user, their family,
  friends and colleagues (homes, jobs, pets, purchases, health, trips, weddings…), some of which change
  over time. Each question carries its gold evidence as ``(session key, index in session)`` pairs.
* :func:`make_entries` — several memories of named entries (policies, product facts, preferences,
  procedures), with direct, paraphrased and off-topic questions.

Question kinds:

``direct``       shares content words with its evidence;
``paraphrased``  written by hand with synonyms and hypernyms ("animals" for "kitten", "money back" for
                 "refund"): apart from a person's or product's name it shares no content word with the evidence;
``temporal``     when / how long ago / what happened on a date — the evidence is the message that dates it;
``update``       a fact that changed ("where do I live now?") — the gold is the latest statement only;
``multi``        needs two messages (before and after a change, an announcement and its outcome).

    .venv/bin/python bench/recall_data.py --sessions 40   # prints a sample and the sizes
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

# --- the datasets ------------------------------------------------------------------------------------------

MessageId = tuple[str, int]  # (session key, index within the session, from 0)


@dataclass(frozen=True)
class Message:
    role: str  # "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Session:
    key: str
    date: dt.date
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class Question:
    qid: str
    kind: str  # direct | paraphrased | temporal | update | multi | offtopic
    text: str
    gold: tuple[MessageId, ...]
    answer: str
    topic: str


@dataclass(frozen=True)
class Dataset:
    seed: int
    user: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    @property
    def message_count(self) -> int:
        return sum(len(s.messages) for s in self.sessions)

    def text(self, message_id: MessageId) -> str:
        key, index = message_id
        return self.by_key[key].messages[index].content

    @cached_property
    def by_key(self) -> dict[str, Session]:
        return {s.key: s for s in self.sessions}


@dataclass(frozen=True)
class EntryItem:
    memory: str
    name: str
    description: str
    content: str


@dataclass(frozen=True)
class EntryQuestion:
    qid: str
    kind: str  # direct | paraphrased | offtopic
    memory: str
    text: str
    gold: tuple[str, ...]  # entry names; empty for off-topic questions


@dataclass(frozen=True)
class EntryDataset:
    seed: int
    entries: tuple[EntryItem, ...]
    questions: tuple[EntryQuestion, ...]

    @property
    def memories(self) -> list[str]:
        return sorted({e.memory for e in self.entries})


# --- vocabulary ---------------------------------------------------------------------------------------------

FIRST_NAMES = """Ana Marta Joana Rui Pedro Tiago Ines Sofia Miguel Carla Nuno Helena Bruno Rita Diogo Clara Filipa
Hugo Lara Vasco Beatriz Duarte Leonor Andre Teresa Goncalo Mariana Ricardo Sara Luis Catarina Tomas Paula Jorge
Eva Simao Laura Daniel Irene Fabio Alice Martim Vera Caio Olga Renato Noemia Igor Lucia Samuel Yara Henrique
Patricia Xavier Madalena Gil Rosa Victor Elisa Artur""".split()  # noqa: SIM905 (reads best as running text)

CITIES: dict[str, tuple[str, str, tuple[str, ...]]] = {  # city: (country, adjective, neighbourhoods)
    "Porto": ("Portugal", "Portuguese", ("Bonfim", "Foz", "Cedofeita", "Boavista")),
    "Lisbon": ("Portugal", "Portuguese", ("Alfama", "Campo de Ourique", "Graca", "Arroios")),
    "Braga": ("Portugal", "Portuguese", ("Maximinos", "Sao Vicente", "Lamacaes")),
    "Coimbra": ("Portugal", "Portuguese", ("Celas", "Santa Clara", "Baixa")),
    "Madrid": ("Spain", "Spanish", ("Lavapies", "Chamberi", "Malasana", "Retiro")),
    "Valencia": ("Spain", "Spanish", ("Ruzafa", "El Carmen", "Benimaclet")),
    "Berlin": ("Germany", "German", ("Kreuzberg", "Neukolln", "Prenzlauer Berg", "Wedding")),
    "Hamburg": ("Germany", "German", ("Altona", "Ottensen", "Eimsbuttel")),
    "Amsterdam": ("the Netherlands", "Dutch", ("De Pijp", "Jordaan", "Oost")),
    "Lyon": ("France", "French", ("Croix-Rousse", "Confluence", "Vieux Lyon")),
    "Milan": ("Italy", "Italian", ("Navigli", "Brera", "Isola")),
    "Edinburgh": ("Scotland", "Scottish", ("Leith", "Stockbridge", "Morningside")),
    "Dublin": ("Ireland", "Irish", ("Ranelagh", "Phibsborough", "Rathmines")),
    "Krakow": ("Poland", "Polish", ("Kazimierz", "Podgorze", "Zwierzyniec")),
}
COMPANIES = ["Acme", "Northwind", "Globex", "Initech", "Umbrella", "Stark Industries", "Hooli", "Vandelay",
             "Wayne Enterprises", "Tyrell", "Cyberdyne", "Soylent", "Aperture", "Massive Dynamic", "Wonka",
             "Oscorp", "Pied Piper", "Gringotts", "Monarch", "Nakatomi"]
ROLES = ["data analyst", "backend engineer", "product manager", "UX designer", "accountant", "nurse",
         "civil engineer", "marketing lead", "teacher", "support specialist", "architect", "QA engineer"]
PET_NAMES = ["Miso", "Tofu", "Pickles", "Biscuit", "Luna", "Nala", "Simba", "Pimenta", "Olive", "Mochi",
             "Bolacha", "Churro", "Pepper", "Ziggy", "Maple", "Noodle"]
PETS = [  # (young word, adult word, adjectives)
    ("kitten", "cat", ("tabby", "ginger", "black-and-white", "grey")),
    ("puppy", "dog", ("beagle", "labrador", "scruffy terrier", "spaniel")),
]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

DISHES = ["risotto", "a Thai green curry", "shakshuka", "bacalhau a bras", "lentil soup", "homemade pizza",
          "a lemon tart", "ramen", "paella", "banana bread", "gnocchi", "chili", "a roast chicken", "falafel"]
FILMS = ["Past Lives", "Dune", "Aftersun", "Oppenheimer", "The Banshees of Inisherin", "Perfect Days",
         "Anatomy of a Fall", "Arrival", "Parasite", "Drive My Car", "Spirited Away", "The Zone of Interest"]
BOOKS = ["Tomorrow, and Tomorrow, and Tomorrow", "Klara and the Sun", "The Overstory", "Piranesi",
         "Stoner", "The Remains of the Day", "Demon Copperhead", "Lessons in Chemistry", "Sapiens",
         "The Left Hand of Darkness", "Project Hail Mary", "Normal People"]
AUTHORS = ["Ursula K. Le Guin", "Kazuo Ishiguro", "Jose Saramago", "Sally Rooney", "Elena Ferrante",
           "Haruki Murakami", "Toni Morrison", "Italo Calvino", "Zadie Smith", "Fernando Pessoa"]
BANDS = ["Radiohead", "Arctic Monkeys", "Rosalia", "Fontaines D.C.", "Bon Iver", "Madredeus", "Phoenix",
         "Khruangbin", "The National", "Caribou"]
TEAMS = ["Benfica", "Porto", "Sporting", "Real Madrid", "Barcelona", "Liverpool", "Bayern", "Ajax", "Celtic"]
GADGETS = ["router", "printer", "phone", "laptop", "smart speaker", "tablet", "monitor", "keyboard"]
WEATHER = ["pouring with rain", "grey and drizzly", "gloriously sunny", "windy", "freezing", "muggy",
           "foggy", "mild", "stormy"]


# --- time phrases ----------------------------------------------------------------------------------------


def day_month(day: dt.date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]}"


def past_phrase(rng: random.Random, today: dt.date) -> tuple[str, dt.date, bool]:
    """A phrase for a day before ``today``, the day it means, and whether it names the date."""
    choice = rng.randrange(6)
    if choice == 0:
        return "yesterday", today - dt.timedelta(days=1), False
    if choice == 1:
        back = rng.randrange(2, 8)
        day = today - dt.timedelta(days=back)
        return f"last {WEEKDAYS[day.weekday()]}", day, False
    if choice == 2:
        weeks = rng.randrange(2, 5)
        return f"{weeks} weeks ago", today - dt.timedelta(weeks=weeks), False
    if choice == 3:
        day = today - dt.timedelta(days=today.weekday() + 2)
        return "last weekend", day, False
    day = today - dt.timedelta(days=rng.randrange(3, 25))
    return f"on {day_month(day)}", day, True


def future_phrase(rng: random.Random, today: dt.date) -> tuple[str, dt.date]:
    """A phrase for a day after ``today`` that names the date, and the day."""
    day = today + dt.timedelta(days=rng.randrange(10, 90))
    if rng.random() < 0.25:
        return f"in {MONTHS[day.month - 1]}", day
    return f"on {day_month(day)}", day


def pick(rng: random.Random, options: Sequence[str], **slots: object) -> str:
    return rng.choice(options).format(**slots)


# --- filler ------------------------------------------------------------------------------------------------

# Each topic: (user lines, assistant lines). Slots: {dish} {film} {book} {author} {band} {team} {gadget}
# {weather} {city} {friend} {weekday} {month} {n}
FILLER: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "work": (
        ("Another day of back-to-back meetings, I barely got any real work done.",
         "Can you help me write a polite email declining a meeting on {weekday}?",
         "My team is arguing about whether to move the release to next sprint.",
         "I need to prepare slides for the quarterly review, any tips on structure?",
         "Our stand-up ran for forty minutes today, that's not a stand-up anymore.",
         "How do I say no to extra tasks without sounding lazy?",
         "The office air conditioning is broken again and it's {weather} outside.",
         "I have a performance review on {weekday}, how should I prepare?",
         "My colleague {friend} keeps scheduling calls at lunchtime.",
         "Can you summarise the main points of agile retrospectives for me?"),
        ("Keep it short: thank them, say you can't make it, and offer an alternative slot.",
         "A clear structure helps: context, what happened, what's next, and one ask.",
         "It might help to agree on a decision rule before the discussion starts.",
         "Try listing what you achieved this quarter with one concrete example each.",
         "You could suggest a time-box of fifteen minutes and park longer topics.",
         "Saying 'I can take this on if we drop X' keeps the trade-off visible.",
         "That sounds exhausting. Blocking focus time in your calendar can help."),
    ),
    "weather": (
        ("It's {weather} here today, I'm not leaving the house.",
         "Is it normal for {month} to be this {weather}?",
         "I got completely soaked on the way home, forgot my umbrella again.",
         "The forecast says it'll be {weather} all weekend, so much for the picnic.",
         "It's so hot I can't sleep, any tricks for keeping a bedroom cool?",
         "First proper frost of the year this morning, the car windscreen was white."),
        ("Weather that time of year can swing a lot, so that isn't unusual.",
         "Closing the blinds during the day and opening windows at night helps a lot.",
         "Maybe an indoor plan: a museum, a film, or a long lunch somewhere cosy.",
         "A compact umbrella that lives in your bag is the only real fix, sadly.",
         "Sounds like a good day for a hot drink and a book."),
    ),
    "cooking": (
        ("I'm making {dish} tonight, what would go well with it?",
         "My {dish} came out way too salty, can I rescue it?",
         "Do you have a quick weeknight dinner idea with chickpeas and spinach?",
         "I tried baking sourdough again and it's flat as a pancake.",
         "How long can I keep cooked rice in the fridge?",
         "What's a good substitute for buttermilk?",
         "We're hosting six people on {weekday}, I was thinking of {dish}.",
         "I burnt the onions while answering a call, the kitchen smells awful."),
        ("A crisp green salad with a sharp dressing would balance it nicely.",
         "Add a little acid and some unsalted base, like potato or plain rice, to dilute it.",
         "Chickpeas, spinach, garlic, cumin and a tin of tomatoes make a great fifteen-minute stew.",
         "Your starter may need more feeding before it's strong enough; try a longer proof.",
         "Cooked rice is best eaten within a day or so and should be cooled quickly.",
         "Milk with a spoon of lemon juice or yoghurt thinned with water works well."),
    ),
    "sport": (
        ("Did you see the {team} match last night? What a finish.",
         "I went for a run this morning, only 5k but it felt great.",
         "{team} lost again, I don't know why I keep watching.",
         "Thinking about signing up for a half marathon, is {n} weeks enough to train?",
         "My knees hurt after football on {weekday}, am I getting old?",
         "The cycling on TV this afternoon was brilliant."),
        ("A gradual plan with one long run a week is the usual approach.",
         "Rest, ice and a lighter week usually help; see someone if it persists.",
         "Supporting a team is mostly about the hope, I think.",
         "Nice! Consistency matters more than distance at the start."),
    ),
    "travel": (
        ("I'm daydreaming about a weekend in {city}, what should I see?",
         "Is it better to take the train or fly to {city}?",
         "My friend {friend} just came back from {city} and loved it.",
         "What should I pack for a few days somewhere {weather}?",
         "Do you know any good day trips from {city}?",
         "I hate airports, the queues at security were endless last time.",
         "We're thinking about a road trip in {month}, maybe along the coast."),
        ("The old town, a food market and a long walk by the water are a good start.",
         "Door to door the train is often comparable and far more relaxing.",
         "Layers, a light rain jacket and comfortable shoes cover most situations.",
         "Booking a fast-track slot or travelling light can make security less painful.",
         "A coastal road trip sounds lovely; plan short driving days so you can stop often."),
    ),
    "tech": (
        ("My {gadget} keeps disconnecting from the wifi, any ideas?",
         "How do I free up space on my {gadget}?",
         "I spilled tea near my {gadget}, it still works but the keys are sticky.",
         "Is it worth paying for a password manager?",
         "The {gadget} update last night broke something, it's so slow now.",
         "Can you explain what a VPN actually does?",
         "My spreadsheet formula returns an error whenever a cell is empty."),
        ("Try restarting the router and forgetting and re-joining the network.",
         "Clearing caches and old downloads usually frees the most space.",
         "A password manager is one of the best security upgrades for the price.",
         "Wrapping the formula in IFERROR or checking for blanks first usually fixes that.",
         "A VPN encrypts traffic between your device and the VPN server, hiding it from the local network.",
         "Rolling back or waiting for a patch are the usual options; check the release notes."),
    ),
    "films": (
        ("We watched {film} last night, I still can't stop thinking about it.",
         "Can you recommend something like {film}?",
         "Is {film} worth watching in the cinema or should I wait?",
         "I fell asleep halfway through {film}, is that bad?",
         "What's a good comfort movie for a rainy {weekday}?"),
        ("That one tends to stay with people; the ending invites a lot of interpretation.",
         "If you liked its pace and mood, a quiet character drama would suit you.",
         "Big visuals benefit from a large screen, but it works at home too.",
         "Something gentle and familiar is perfect for that kind of evening."),
    ),
    "books": (
        ("I just finished {book}, what should I read next?",
         "Have you read anything by {author}? Where should I start?",
         "My book club picked {book} for {month}.",
         "I can't get into {book}, should I give up on it?",
         "I want to read more non-fiction this year, any suggestions?"),
        ("Life is short; it's fine to put a book down if it isn't working for you.",
         "Starting with one of the shorter, better-known works is usually a safe bet.",
         "Book clubs are great for pushing you towards things you wouldn't pick.",
         "Popular science and narrative history are easy ways into non-fiction."),
    ),
    "music": (
        ("I've had a song by {band} stuck in my head all day.",
         "What's a good album to listen to while working?",
         "The neighbours were playing loud music until 2am again.",
         "I finally made a playlist for running."),
        ("Instrumental or ambient albums are easy to work to.",
         "Earworms usually fade faster if you listen to the song all the way through.",
         "That's rough; a polite note is often the best first step."),
    ),
    "home": (
        ("The washing machine is making a strange banging noise.",
         "I spent the whole {weekday} cleaning, the flat finally looks decent.",
         "Our neighbour's renovation starts at 8am every day, the drilling is unbearable.",
         "I want more plants but I kill every single one.",
         "Should I paint the hallway a dark colour or keep it white?",
         "The landlord still hasn't fixed the leaking tap."),
        ("An unbalanced load is the usual cause; try redistributing the laundry.",
         "Snake plants and pothos are very forgiving if you forget to water them.",
         "Dark colours can make a hallway feel cosy if there's enough light.",
         "Putting the request in writing with a date usually moves things along."),
    ),
    "small talk": (
        ("Good morning! Slow start today, need more coffee.",
         "Thanks, that was really helpful.",
         "Ha, fair enough.",
         "I'm back, sorry, I got distracted.",
         "What do you think I should do this weekend?",
         "I'm so tired today, I slept badly.",
         "Okay, let me think about it.",
         "That makes sense, thank you."),
        ("Good morning! Coffee first, then everything else.",
         "You're welcome, happy to help.",
         "No problem at all, take your time.",
         "Welcome back! Where were we?",
         "Maybe something relaxing: a walk, a long lunch, an early night.",
         "Sorry to hear that. A short walk in daylight can help with the fog.",
         "Sure, let me know if you want to go through the options together."),
    ),
    "money": (
        ("I need to make a budget, I have no idea where my money goes.",
         "Is it a good idea to pay off a loan early?",
         "My electricity bill doubled this month, that can't be right.",
         "How much should I be saving each month?",
         "I keep forgetting to cancel free trials before they charge me."),
        ("Tracking every expense for a month is the best first step.",
         "It depends on the interest rate and any early repayment fee.",
         "It's worth checking the meter reading against the bill; estimates are often wrong.",
         "A common rule of thumb is to save a fixed share of income automatically on payday."),
    ),
    "language": (
        ("How do you say 'I'm running late' in {lang}?",
         "I keep mixing up 'por' and 'para', is there a trick?",
         "My {lang} lessons are going slowly, I forget the vocabulary.",
         "Can you correct this sentence for me: 'I am here since two years'?"),
        ("Spaced repetition apps are good for vocabulary that won't stick.",
         "It should be 'I have been here for two years'.",
         "A simple rule: 'para' for purpose and destination, 'por' for cause and exchange."),
    ),
    "gardening": (
        ("My tomatoes have yellow leaves at the bottom, are they dying?",
         "When should I plant basil outside?",
         "Something is eating the lettuce on the balcony.",
         "The lavender finally flowered, it smells amazing."),
        ("Lower leaves yellowing is common; check watering and feed them a little.",
         "Wait until nights are reliably warm; basil hates the cold.",
         "Slugs and snails are the usual suspects; check after dark."),
    ),
}
LANGUAGES = ["Spanish", "German", "Italian", "French", "Dutch", "Japanese"]


# --- sessions under construction ---------------------------------------------------------------------------


@dataclass
class Planted:
    """A message planted in a session, waiting for its index."""

    tag: int
    role: str
    content: str


@dataclass
class Draft:
    key: str
    date: dt.date
    length: int
    blocks: list[list[Planted]] = field(default_factory=list)


@dataclass
class Plan:
    """A question whose gold messages are still tags."""

    kind: str
    text: str
    tags: tuple[int, ...]
    answer: str
    topic: str


class Builder:
    """Plants facts in sessions and keeps the questions about them."""

    def __init__(self, rng: random.Random, drafts: list[Draft], user: str) -> None:
        self.rng = rng
        self.drafts = drafts
        self.user = user
        self.plans: list[Plan] = []
        self._next_tag = 1
        self._orders: dict[str, list[str]] = {}

    def say(self, session: int, content: str, reply: str) -> int:
        """The user says ``content`` in a session (the assistant answers ``reply``); the message's tag."""
        tag = self._next_tag
        self._next_tag += 1
        self.drafts[session].blocks.append([Planted(tag, "user", content), Planted(0, "assistant", reply)])
        return tag

    def ask(self, kind: str, text: str, tags: Sequence[int], answer: str, topic: str) -> None:
        self.plans.append(Plan(kind, text, tuple(tags), answer, topic))

    def session_in(self, lo: float, hi: float) -> int:
        """A session index in the fraction [lo, hi) of the timeline."""
        n = len(self.drafts)
        first = min(n - 1, int(lo * n))
        return self.rng.randrange(first, max(first + 1, min(n, int(hi * n))))

    def nth(self, name: str, pool: Sequence[str], n: int) -> str:
        """The n-th of a shuffled copy of ``pool``, the same copy for every call with this name: distinct
        values for distinct n (up to the pool's size)."""
        if name not in self._orders:
            order = list(pool)
            self.rng.shuffle(order)
            self._orders[name] = order
        order = self._orders[name]
        return order[n % len(order)]

    def date(self, session: int) -> dt.date:
        return self.drafts[session].date


# --- the facts ------------------------------------------------------------------------------------------------


@dataclass
class Cast:
    user: str
    sister: str
    sister_partner: str
    brother: str
    friends: list[str]
    colleagues: list[str]
    others: list[str]


ACKS = ("Oh, nice! Thanks for telling me.", "That's good to know, I'll keep it in mind.",
        "Wow, that's a big deal!", "Thanks for sharing that.", "Noted! How do you feel about it?",
        "That sounds lovely.", "Interesting, tell me more if you like.")


def ack(rng: random.Random, *specific: str) -> str:
    return rng.choice((*specific, *ACKS)) if specific else rng.choice(ACKS)


def plant_residence(b: Builder, cast: Cast) -> None:
    """Where the user lives: a first city, then two moves; the update question's gold is the last move."""
    rng = b.rng
    cities = rng.sample(sorted(CITIES), 3)
    hoods = [rng.choice(CITIES[c][2]) for c in cities]
    first = b.session_in(0.0, 0.08)
    t0 = b.say(first, pick(rng, ("I've lived in {c} for about {n} years now, in {h}.",
                                 "Our flat is in {h}, in {c}; we've been here since {y}."),
                          c=cities[0], h=hoods[0], n=rng.randrange(3, 9), y=b.date(first).year - rng.randrange(2, 6)),
               ack(rng, f"{cities[0]} sounds like a great place to live."))
    tags = [t0]
    when_tags: list[tuple[int, str, dt.date]] = []
    for step, (lo, hi) in enumerate(((0.3, 0.45), (0.7, 0.85)), start=1):
        s = b.session_in(lo, hi)
        phrase, day, _ = past_phrase(rng, b.date(s))
        tag = b.say(s, pick(rng, ("Big news: we moved to {c} {w}! The new flat is in {h}.",
                                  "We finally made the move to {c} {w}; we're settling into {h}.",
                                  "Moving day was {w}, so we're officially in {c} now, in {h}."),
                            c=cities[step], h=hoods[step], w=phrase),
                    ack(rng, "Congratulations on the move! Unpacking is the worst part.",
                        "How exciting, a new city!"))
        tags.append(tag)
        when_tags.append((tag, cities[step], day))
    for tag, city, day in when_tags:
        b.ask("temporal", pick(rng, ("When did I move to {c}?", "When was the move to {c}?"), c=city), [tag],
              day.isoformat(), "residence")
    b.ask("update", pick(rng, ("Where do I live now?", "Which city do I live in at the moment?")), [tags[-1]],
          cities[-1], "residence")
    b.ask("paraphrased", pick(rng, ("What town am I based in these days?", "Where is home for me currently?")),
          [tags[-1]], cities[-1], "residence")
    b.ask("direct", f"Which neighbourhood of {cities[0]} did I live in?", [t0], hoods[0], "residence")
    b.ask("multi", f"Where did I live before the move to {cities[1]}, and which area of {cities[1]} did I move to?",
          [t0, tags[1]], f"{cities[0]}; {hoods[1]}", "residence")


def plant_job(b: Builder, cast: Cast) -> None:
    """The user's job: one employer, an offer from another, then the first day there."""
    rng = b.rng
    firms = rng.sample(COMPANIES, 2)
    roles = rng.sample(ROLES, 2)
    s0 = b.session_in(0.0, 0.1)
    t0 = b.say(s0, pick(rng, ("I work as a {r} at {f}, it's fine but the commute is long.",
                              "For context, I'm a {r} at {f}."), r=roles[0], f=firms[0]),
               ack(rng, "Got it, thanks for the context."))
    s1 = b.session_in(0.35, 0.6)
    t1 = b.say(s1, pick(rng, ("Today I handed in my notice! I start at {f} as a {r} in two weeks.",
                              "I accepted the offer from {f}, I'll be their new {r}."), f=firms[1], r=roles[1]),
               ack(rng, "Congratulations on the new job!"))
    s2 = b.session_in(0.62, 0.75)
    phrase, day, _ = past_phrase(rng, b.date(s2))
    t2 = b.say(s2, pick(rng, ("My first day at {f} was {w}, everyone was really welcoming.",
                              "I officially joined {f} {w}, still learning everyone's names."), f=firms[1], w=phrase),
               ack(rng, "First weeks are always a blur. Glad it went well!"))
    b.ask("direct", f"What was my role at {firms[0]}?", [t0], roles[0], "job")
    b.ask("direct", f"What position did {firms[1]} offer me?", [t1], roles[1], "job")
    b.ask("temporal", pick(rng, ("How long ago did I start at {f}?", "When did I start working at {f}?"),
                           f=firms[1]), [t2], day.isoformat(), "job")
    b.ask("update", pick(rng, ("Where do I work now?", "Who is my current employer?")), [t2], firms[1], "job")
    b.ask("paraphrased", "Which organisation pays my salary these days?", [t2], firms[1], "job")
    b.ask("multi", "Which companies have I been employed by?", [t0, t2], ", ".join(firms), "job")


def plant_pets(b: Builder, cast: Cast) -> None:
    """A pet adopted, then renamed; the update question's gold is the renaming."""
    rng = b.rng
    young, adult, adjectives = rng.choice(PETS)
    names = rng.sample(PET_NAMES, 2)
    s0 = b.session_in(0.1, 0.3)
    phrase, day, _ = past_phrase(rng, b.date(s0))
    t0 = b.say(s0, pick(rng, ("We adopted a {a} {y} {w}, we called it {n}!",
                              "Meet {n}: a {a} {y} we brought home from the shelter {w}."),
                        a=rng.choice(adjectives), y=young, n=names[0], w=phrase),
               ack(rng, "Oh, adorable! Send my regards to the little one."))
    s1 = b.session_in(0.5, 0.7)
    t1 = b.say(s1, pick(rng, ("Funny thing, we ended up renaming {o} to {n}, it suits the little rascal better.",
                              "{o} is now officially {n}; the old name never stuck."), o=names[0], n=names[1]),
               ack(rng, "Ha, sometimes a name just has to fit."))
    b.ask("paraphrased", pick(rng, ("Do I have any animals at home?", "Is there a furry companion in my household?")),
          [t0], f"a {young} called {names[0]}", "pets")
    b.ask("update", f"What is my {adult} called now?", [t1], names[1], "pets")
    b.ask("temporal", f"When did I adopt {names[0]}?", [t0], day.isoformat(), "pets")
    b.ask("direct", f"What did we name the {young} we adopted?", [t0], names[0], "pets")
    b.ask("multi", f"What was my {adult}'s original name and what is it now?", [t0, t1], " -> ".join(names), "pets")


def plant_wedding(b: Builder, cast: Cast) -> None:
    rng = b.rng
    place = rng.choice(["Sintra", "a vineyard in the Douro", "Evora", "a farm near Aveiro", "Cascais"])
    s0 = b.session_in(0.15, 0.4)
    phrase, day = future_phrase(rng, b.date(s0))
    t0 = b.say(s0, f"My sister {cast.sister} is getting married {phrase} in {place}! I'm one of the bridesmaids.",
               ack(rng, "How wonderful, congratulations to her!"))
    s1 = next((i for i, d in enumerate(b.drafts) if d.date > day), len(b.drafts) - 1)
    t1 = b.say(s1, f"The wedding was beautiful, {cast.sister} and {cast.sister_partner} danced until 3am.",
               ack(rng, "That sounds like a perfect day."))
    b.ask("temporal", f"When is {cast.sister}'s wedding?", [t0], day.isoformat(), "family")
    b.ask("paraphrased", f"Where does {cast.sister} tie the knot?", [t0], place, "family")
    b.ask("paraphrased", "Who is my sibling's spouse?", [t1], cast.sister_partner, "family")
    b.ask("multi", f"Where was {cast.sister}'s wedding and how did it go?", [t0, t1], place, "family")


# (statement, direct question, paraphrased question, temporal question or "", answer)
Fact = tuple[str, str, str, str, str]

FAMILY_EVENTS: list[Fact] = [
    # {b} brother, {x} a new name, {w} a time phrase
    ("My brother {b} and his wife had a baby girl {w}, they named her {x}!", "What is {b}'s baby girl called?",
     "Did {b} become a father?", "When was {b}'s daughter born?", "{x}"),
    ("Dad finally retired from the railway {w} after 35 years.", "Did Dad retire from the railway?",
     "Has my father stopped working?", "When did Dad retire?", "yes"),
    ("Mum had her knee operation {w}, the surgeon said it went well.", "How did Mum's knee operation go?",
     "Was my mother in hospital for a procedure?", "When was Mum's knee operation?", "it went well"),
    ("My grandmother turned 90 {w}, we had a huge lunch for her.", "Did my grandmother turn 90?",
     "How old is my gran now?", "When was my grandmother's 90th birthday lunch?", "90"),
    ("My cousin {x} passed the bar exam {w}, she's a lawyer now.", "Did my cousin {x} pass the bar exam?",
     "Which relative of mine qualified in law recently?", "When did {x} pass the bar exam?", "{x}"),
]


def plant_family(b: Builder, cast: Cast) -> None:
    plant_statements(b, cast, FAMILY_EVENTS, "family")


# (item, words to avoid in the paraphrase, hypernym or synonym for the question, brands)
PURCHASES: list[tuple[str, str, tuple[str, ...]]] = [
    ("road bike", "bicycle", ("Cannondale", "Specialized", "Orbea")),
    ("laptop", "computer", ("Lenovo", "Dell", "Framework")),
    ("sofa", "couch", ("IKEA", "Habitat")),
    ("espresso machine", "coffee maker", ("De'Longhi", "Gaggia", "Sage")),
    ("noise-cancelling headphones", "audio gear for my ears", ("Sony", "Bose")),
    ("mattress", "thing to sleep on", ("Emma", "Simba")),
    ("fridge", "refrigerator", ("Bosch", "Samsung")),
    ("washing machine", "laundry appliance", ("Miele", "Bosch")),
    ("e-reader", "device for books", ("Kindle", "Kobo")),
    ("drone", "flying camera", ("DJI",)),
    ("air fryer", "kitchen gadget", ("Philips", "Ninja")),
    ("electric scooter", "two-wheeler for commuting", ("Xiaomi", "Segway")),
    ("standing desk", "workstation furniture", ("Flexispot", "Autonomous")),
    ("winter coat", "warm outerwear", ("Patagonia", "Uniqlo")),
    ("hiking boots", "footwear for trails", ("Salomon", "Merrell")),
    ("robot vacuum", "floor-cleaning gadget", ("Roomba", "Roborock")),
    ("tent", "camping shelter", ("Quechua", "MSR")),
    ("smartwatch", "wrist wearable", ("Garmin", "Apple")),
]


def plant_purchases(b: Builder, cast: Cast, count: int) -> None:
    rng = b.rng
    items = list(PURCHASES)
    rng.shuffle(items)
    for i in range(count):
        item, other, brands = items[i % len(items)]
        brand = rng.choice(brands)
        price = rng.choice([49, 89, 120, 199, 249, 329, 450, 640, 899, 1200, 1450])
        s = b.session_in(0.02, 0.9)
        phrase, day, dated = past_phrase(rng, b.date(s))
        tag = b.say(s, pick(rng, ("I bought a {br} {it} {w} for {p} euros.",
                                  "Treated myself to a {br} {it} {w}, it was {p} euros.",
                                  "Finally ordered the {br} {it} {w}; {p} euros, ouch."),
                            br=brand, it=item, w=phrase, p=price),
                    ack(rng, "Nice purchase! Let me know how you like it."))
        b.ask("direct", f"How much did I pay for the {item}?", [tag], f"{price} euros", "purchases")
        b.ask("paraphrased", pick(rng, ("What did the new {o} cost me?", "Did I get a new {o}?"), o=other),
              [tag], f"{brand} {item}", "purchases")
        if dated:
            b.ask("temporal", f"What did I buy on {day_month(day)}?", [tag], item, "purchases")
        else:
            b.ask("temporal", f"When did I buy the {brand} {item}?", [tag], day.isoformat(), "purchases")
        if i % 3 == 0:  # some go back to the shop
            later = min(len(b.drafts) - 1, s + rng.randrange(2, 10))
            refund = b.say(later, pick(rng, ("The shop finally gave me my money back for the {it}, it was faulty.",
                                             "I returned the {it}; they reimbursed the full {p} euros."),
                                       it=item, p=price),
                           ack(rng, "Good, at least you weren't out of pocket."))
            if "money back" in b.drafts[later].blocks[-1][0].content:
                b.ask("paraphrased", f"Did I get a refund for the {item}?", [refund], "yes", "purchases")
            b.ask("multi", f"What happened with the {item} I bought?", [tag, refund], "bought, then returned",
                  "purchases")


HEALTH: list[Fact] = [
    ("I'm allergic to penicillin, I found out the hard way as a kid.", "Am I allergic to penicillin?",
     "Which medicines should I avoid taking?", "", "penicillin"),
    ("Turns out I'm lactose intolerant, so no more milk in my coffee.", "Am I lactose intolerant?",
     "Are there dairy products I can't have?", "", "lactose"),
    ("I sprained my ankle playing five-a-side {w}, it's still swollen.", "How did I sprain my ankle?",
     "Did I hurt myself recently?", "When did I sprain my ankle?", "five-a-side"),
    ("My GP put me on blood pressure tablets {w}.", "What did my GP prescribe?",
     "Am I on any medication?", "When did I start the blood pressure tablets?", "blood pressure tablets"),
    ("I have a dentist appointment {f} for a filling.", "What is my dentist appointment for?",
     "Am I seeing someone about my teeth soon?", "When is my dentist appointment?", "a filling"),
    ("I've been getting migraines every week since the clocks changed.", "How often do I get migraines?",
     "Do I suffer from bad headaches?", "", "every week"),
    ("The optician says I need glasses for driving now.", "What did the optician say?",
     "Am I supposed to wear spectacles behind the wheel?", "", "glasses for driving"),
    ("I've been sleeping terribly, maybe four hours a night.", "How many hours a night have I been sleeping?",
     "Am I suffering from insomnia?", "", "four hours"),
]

PREFERENCES: list[Fact] = [
    ("I've been vegetarian since {y}, so no meat for me.", "Since when have I been vegetarian?",
     "Do I eat steak or chicken?", "", "vegetarian since {y}"),
    ("I always book a window seat on flights, I like to look out.", "Do I prefer a window seat on flights?",
     "Where do I prefer to sit on planes?", "", "window"),
    ("My favourite film of all time is {film}.", "What is my favourite film?", "Which movie do I love most?", "",
     "{film}"),
    ("My favourite author is {author}, I've read everything.", "Who is my favourite author?",
     "Which writer do I like best?", "", "{author}"),
    ("I take my coffee black with no sugar.", "How do I take my coffee?", "How do I like my espresso served?", "",
     "black, no sugar"),
    ("I support {team}, I've had a season ticket for years.", "Which team do I support?",
     "Which football club am I a fan of?", "", "{team}"),
    ("I really dislike horror films, they give me nightmares.", "Do I like horror films?",
     "Should I suggest something scary to watch?", "", "no"),
    ("I prefer phone calls to long emails, they save time.", "Do I prefer phone calls or emails?",
     "How do I like to be contacted?", "", "phone calls"),
]

HOBBIES: list[Fact] = [
    ("I've started taking {instr} lessons on Thursdays, the first one was {w}.", "When are my {instr} lessons?",
     "Am I learning a musical instrument?", "When did I start {instr} lessons?", "{instr}"),
    ("I joined a bouldering gym {w}, I go three times a week.", "How often do I go to the bouldering gym?",
     "What kind of climbing sport do I do?", "When did I join the bouldering gym?", "bouldering"),
    ("I signed up for a pottery class {w}, my first bowl is very wonky.", "How is my pottery class going?",
     "Have I taken up any creative pastimes with clay?", "When did I sign up for pottery?", "pottery"),
    ("I've been learning {lang} on an app for {n} months.", "Which language am I learning on the app?",
     "Am I studying a foreign tongue?", "", "{lang}"),
    ("I started running with a club on Sunday mornings {w}.", "When does my running club meet?",
     "Do I jog with a group?", "When did I start running with the club?", "Sunday mornings"),
    ("I'm training for the {city} half marathon {f}.", "Which half marathon am I training for?",
     "Which race am I preparing for?", "When is the {city} half marathon?", "{city} half marathon"),
]

TRIPS: list[Fact] = [
    ("I'm flying to {city} for a conference {f}.", "Am I flying to {city} for a conference?",
     "Am I going to {country} for work?", "When is my conference in {city}?", "{city}"),
    ("We booked a week in {island} {f}, I can't wait.", "Did we book a week in {island}?",
     "Are we going to {island} on vacation?", "When is our week in {island}?", "{island}"),
    ("Got tickets to see {band} {f}!", "Do I have tickets for {band}?", "Am I going to a {band} gig?",
     "When am I seeing {band}?", "{band}"),
    ("My friend {x} and I are doing {walk} {f}.", "Who am I doing {walk} with?",
     "Am I going on a long-distance hike with {x}?", "When is the trek with {x}?", "{x}"),
]
INSTRUMENTS = ["piano", "guitar", "cello", "drum", "saxophone", "violin"]


def plant_statements(b: Builder, cast: Cast, table: Sequence[Fact], topic: str, variant: int = 0) -> None:
    """One fact per row, planted once, with a direct and a paraphrased question (and a temporal one when the
    statement carries a time). Each ``variant`` of a table names different places, bands and friends."""
    rng = b.rng
    for statement, direct, para, temporal, answer in table:
        s = b.session_in(0.02, 0.92)
        phrase, day, _ = past_phrase(rng, b.date(s))
        future, when = future_phrase(rng, b.date(s))
        city = b.nth("city", sorted(CITIES), variant)
        slots = {"w": phrase, "f": future, "y": b.date(s).year - 6, "b": cast.brother, "x": rng.choice(cast.others),
                 "film": rng.choice(FILMS), "author": rng.choice(AUTHORS), "team": rng.choice(TEAMS),
                 "instr": rng.choice(INSTRUMENTS), "lang": rng.choice(LANGUAGES), "n": rng.randrange(2, 10),
                 "city": city, "country": CITIES[city][0], "band": b.nth("band", BANDS, variant),
                 "island": b.nth("island", ISLANDS, variant), "walk": b.nth("walk", WALKS, variant)}
        if topic == "trips":
            slots["x"] = b.nth("friend", cast.friends, variant)
        tag = b.say(s, statement.format(**slots), ack(rng))
        b.ask("direct", direct.format(**slots), [tag], answer.format(**slots), topic)
        b.ask("paraphrased", para.format(**slots), [tag], answer.format(**slots), topic)
        if temporal:
            b.ask("temporal", temporal.format(**slots), [tag], (when if "{f}" in statement else day).isoformat(),
                  topic)
        if topic == "trips":
            plant_trip_report(b, s, tag, when, statement, slots)


TRIP_REPORTS = [  # the report after each of TRIPS: (statement, direct question, multi question)
    ("Back from {city}: the conference talks were mediocre but the food was amazing.",
     "How did the conference in {city} go?", "Did I enjoy the event I flew to {country} for?"),
    ("{island} was stunning, we hiked and swam every day.", "What did we do in {island}?",
     "How was our holiday in {island}?"),
    ("{band} were incredible live, they played for two hours.", "How was the {band} show?",
     "Was the {band} gig any good?"),
    ("We finished {walk}! {x} and I walked 160 km in nine days.", "Did we finish {walk}?",
     "How far did {x} and I trek?"),
]
ISLANDS = ["Madeira", "the Azores", "Crete", "Sardinia", "Mallorca", "Sicily", "Corsica", "Gozo", "Tenerife"]
WALKS = ["the Camino", "the West Highland Way", "the Rota Vicentina", "the Tour du Mont Blanc", "the GR20",
         "the Via Algarviana"]


def plant_trip_report(b: Builder, booked: int, booking_tag: int, when: dt.date, statement: str,
                      slots: dict[str, object]) -> None:
    """After the trip, the user tells how it went: a direct question about it, and a multi one with the booking."""
    after = next((i for i in range(booked + 1, len(b.drafts)) if b.date(i) > when), None)
    if after is None:
        return
    report, direct, multi = TRIP_REPORTS[next(i for i, row in enumerate(TRIPS) if row[0] == statement)]
    tag = b.say(after, report.format(**slots), ack(b.rng, "Welcome back! It sounds like it was worth it."))
    b.ask("direct", direct.format(**slots), [tag], "see evidence", "trips")
    b.ask("multi", f"{multi.format(**slots)} And when was it?", [booking_tag, tag], when.isoformat(), "trips")


# Facts that change: (attribute, statement of a value, update question, paraphrased update question, question
# about the value before, values in order or to sample from)
CHANGES: list[tuple[str, str, str, str, str, tuple[str, ...]]] = [
    ("gym", "I switched my gym membership to {v}, the old one was always packed.", "Which gym do I go to now?",
     "Where do I work out these days?", "Which gym was I a member of before {v}?",
     ("FitLab", "Holmes Place", "Solinca", "Basic-Fit", "Virgin Active")),
    ("car", "We sold the old car and bought a {v}.", "What car do we have now?",
     "What do we drive at the moment?", "Which car did we have before the {v}?",
     ("Renault Clio", "VW Golf", "Toyota Yaris", "Tesla Model 3", "Fiat 500")),
    ("manager", "Reorg news: my new manager is {v}.", "Who is my manager now?", "Who is my boss currently?",
     "Who was my manager before {v}?", ()),
    ("carrier", "I moved my phone contract over to {v}, much cheaper.", "Which phone contract provider am I with?",
     "Which mobile carrier do I use now?", "Which provider was my phone contract with before {v}?",
     ("Vodafone", "MEO", "NOS", "Digi")),
    ("bank", "I moved my savings account to {v} for the better interest rate.", "Which bank is my savings account at?",
     "Where do I keep my money these days?", "Where was my savings account before {v}?",
     ("ING", "Revolut", "Millennium", "N26", "Santander")),
    ("rent", "Our rent went up again, it's {v} euros a month now.", "How much is our rent now?",
     "How much do we pay for the flat each month?", "What was our rent before it went up to {v} euros?",
     ("850", "920", "1,050", "1,150")),
    ("series", "I'm now watching {v}, I'm completely hooked.", "Which series am I watching now?",
     "What TV show am I into at the moment?", "What was I watching before {v}?",
     ("Severance", "The Bear", "Slow Horses", "Shogun", "Succession")),
    ("book", "Currently reading {v}, it's slow but good.", "What am I reading currently?",
     "Which novel am I in the middle of?", "What was I reading before {v}?", ()),
    ("10k", "New personal best at the 10k today: {v}!", "What is my 10k personal best?",
     "How fast can I run ten kilometres?", "What was my 10k best before {v}?", ("52:10", "49:45", "47:30", "46:05")),
    ("phone", "Upgraded my phone, I've got a {v} now.", "Which phone do I have now?",
     "What mobile handset am I using these days?", "Which phone did I have before the {v}?",
     ("Pixel 8", "iPhone 15", "Galaxy S23", "Fairphone 5")),
    ("cleaner", "The cleaner comes on {v}s now instead.", "Which day does the cleaner come now?",
     "When is the house tidied each week?", "Which day did the cleaner come before switching to {v}?",
     ("Monday", "Wednesday", "Friday", "Saturday")),
    ("cafe", "My new favourite café is {v}, their pastries are unreal.", "What is my favourite café now?",
     "Where do I get my morning espresso these days?", "Which café was my favourite before {v}?",
     ("Fabrica", "Copenhagen Coffee Lab", "Manteigaria", "Hello Kristof")),
    ("commute", "I commute by {v} now, it's so much better.", "How do I commute now?",
     "How do I get to the office these days?", "How did I commute before going by {v}?",
     ("bike", "metro", "bus", "car", "train")),
]
ORDERED = {"rent", "10k"}  # values that only go one way


def plant_changes(b: Builder, cast: Cast) -> None:
    """Each attribute takes two or three values over the timeline; "now" is the last, "before" the one ahead."""
    rng = b.rng
    for attribute, statement, update, para, before, values in CHANGES:
        pool = {"manager": tuple(cast.colleagues), "book": tuple(BOOKS)}.get(attribute, values)
        steps = rng.randrange(2, 4)
        chosen = list(pool[:steps]) if attribute in ORDERED else rng.sample(list(pool), steps)
        tags = []
        for step, value in enumerate(chosen):
            s = b.session_in(0.9 * step / steps, 0.9 * (step + 1) / steps)
            tags.append(b.say(s, statement.format(v=value), ack(rng)))
        b.ask("update", update, [tags[-1]], chosen[-1], attribute)
        b.ask("update", para, [tags[-1]], chosen[-1], attribute)
        b.ask("direct", before.format(v=chosen[-1]), [tags[-2]], chosen[-2], attribute)


OTHERS: list[Fact] = [
    # about friends and colleagues — {p} the person, {c} a city
    ("My friend {p} is moving to {c} for a new job.", "Where is {p} moving to?", "Which town is {p} relocating to?",
     "", "{c}"),
    ("{p} from work got promoted to team lead {w}.", "Did {p} get promoted to team lead?",
     "Did {p} get a more senior position?", "When did {p} get promoted?", "team lead"),
    ("{p} had twins {w}! A boy and a girl.", "Did {p} have twins?", "Does {p} have kids now?",
     "When were {p}'s twins born?", "twins"),
    ("{p}'s birthday is on {d}, remind me to get a present.", "When is {p}'s birthday?",
     "What day was {p} born?", "", "{d}"),
    ("{p} is allergic to peanuts, so no satay when they come round.", "Is {p} allergic to peanuts?",
     "Can {p} eat nuts?", "", "no"),
    ("{p} quit their job to open a bakery in {c}.", "Where did {p} open the bakery?",
     "What new business did {p} start?", "", "a bakery"),
    ("{p} just got engaged, I'm so happy for them.", "Did {p} get engaged?",
     "Is {p} planning to wed?", "", "yes"),
    ("{p} broke a wrist skiing {w}.", "How did {p} break a wrist?", "Was {p} injured on the slopes?",
     "When did {p} break a wrist?", "skiing"),
]


def plant_others(b: Builder, cast: Cast, rounds: int) -> None:
    rng = b.rng
    people = cast.friends + cast.colleagues
    for r in range(rounds):
        for i, (statement, direct, para, temporal, answer) in enumerate(OTHERS):
            p = people[(i + r) % len(people)]  # a person never gets the same kind of news twice
            s = b.session_in(0.02, 0.95)
            phrase, day, _ = past_phrase(rng, b.date(s))
            _, when = future_phrase(rng, b.date(s))
            slots = {"p": p, "c": rng.choice(sorted(CITIES)), "w": phrase, "d": day_month(when)}
            tag = b.say(s, statement.format(**slots), ack(rng))
            b.ask("direct", direct.format(**slots), [tag], answer.format(**slots), "others")
            b.ask("paraphrased", para.format(**slots), [tag], answer.format(**slots), "others")
            if temporal:
                b.ask("temporal", temporal.format(**slots), [tag], day.isoformat(), "others")
            if i == 0:  # the friend who moved reports back later
                later = min(len(b.drafts) - 1, s + rng.randrange(3, 20))
                news = b.say(later, f"Spoke to {p} {past_phrase(rng, b.date(later))[0]}: life in {slots['c']} is "
                                    "great but the rents are crazy.", ack(rng))
                b.ask("multi", f"Where did {p} move to, and how is it going?", [tag, news], slots["c"], "others")


# --- filler and assembly ----------------------------------------------------------------------------------------


def filler_pair(rng: random.Random, cast: Cast, day: dt.date) -> list[Planted]:
    topic = rng.choice(sorted(FILLER))
    users, replies = FILLER[topic]
    slots = {"dish": rng.choice(DISHES), "film": rng.choice(FILMS), "book": rng.choice(BOOKS),
             "author": rng.choice(AUTHORS), "band": rng.choice(BANDS), "team": rng.choice(TEAMS),
             "gadget": rng.choice(GADGETS), "weather": rng.choice(WEATHER), "city": rng.choice(sorted(CITIES)),
             "friend": rng.choice(cast.friends + cast.colleagues), "weekday": rng.choice(WEEKDAYS),
             "month": rng.choice(MONTHS), "n": rng.randrange(6, 16), "lang": rng.choice(LANGUAGES)}
    user = rng.choice(users).format(**slots)
    if rng.random() < 0.15:  # now and then a follow-up sentence
        user += " " + rng.choice(FILLER["small talk"][0]).format(**slots)
    return [Planted(0, "user", user), Planted(0, "assistant", rng.choice(replies).format(**slots))]


def greeting(rng: random.Random, cast: Cast, day: dt.date) -> list[Planted]:
    hello = rng.choice(("Hi!", "Hey, are you there?", "Morning!", "Hello again.", "Quick question."))
    reply = rng.choice((f"Hi {cast.user}! How can I help?", f"Hello {cast.user}, good to see you.",
                        "Hi! What's on your mind today?", f"Happy {WEEKDAYS[day.weekday()]}! What can I do for you?"))
    return [Planted(0, "user", hello), Planted(0, "assistant", reply)]


def assemble(rng: random.Random, drafts: list[Draft], cast: Cast) -> tuple[list[Session], dict[int, MessageId]]:
    sessions: list[Session] = []
    where: dict[int, MessageId] = {}
    for draft in drafts:
        facts = draft.blocks
        planted = sum(len(block) for block in facts)
        fill = [filler_pair(rng, cast, draft.date) for _ in range(max(0, draft.length - planted - 2) // 2)]
        for block in facts:
            fill.insert(rng.randrange(len(fill) + 1), block)
        flat = [*greeting(rng, cast, draft.date), *(m for block in fill for m in block)]
        for index, message in enumerate(flat):
            if message.tag:
                where[message.tag] = (draft.key, index)
        sessions.append(Session(draft.key, draft.date, tuple(Message(m.role, m.content) for m in flat)))
    return sessions, where


def make_cast(rng: random.Random) -> Cast:
    names = rng.sample(FIRST_NAMES, 22)
    return Cast(user=names[0], sister=names[1], sister_partner=names[2], brother=names[3], friends=names[4:9],
                colleagues=names[9:14], others=names[14:])


def make_conversations(seed: int = 7, sessions: int = 300) -> Dataset:
    """``sessions`` sessions of 20–80 messages, facts planted across them, and the questions about them."""
    if sessions < 10:
        raise ValueError("at least 10 sessions")
    rng = random.Random(seed)
    cast = make_cast(rng)
    day = dt.date(2023, 1, 2) + dt.timedelta(days=rng.randrange(60))
    drafts = []
    for i in range(sessions):
        drafts.append(Draft(f"s{i + 1:03d}", day, rng.randrange(20, 81)))
        day += dt.timedelta(days=rng.randrange(1, 5))
    b = Builder(rng, drafts, cast.user)
    scale = max(1, round(sessions / 100))
    plant_residence(b, cast)
    plant_job(b, cast)
    plant_pets(b, cast)
    plant_wedding(b, cast)
    plant_family(b, cast)
    plant_purchases(b, cast, count=min(len(PURCHASES), 6 * scale))
    plant_statements(b, cast, HEALTH, "health")
    plant_statements(b, cast, PREFERENCES, "preferences")
    plant_statements(b, cast, HOBBIES, "hobbies")
    for variant in range(scale):
        plant_statements(b, cast, TRIPS, "trips", variant)
    plant_changes(b, cast)
    plant_others(b, cast, rounds=min(10, 2 * scale))
    built, where = assemble(rng, drafts, cast)
    asked: dict[str, int] = {}
    for plan in b.plans:
        asked[plan.text] = asked.get(plan.text, 0) + 1
    unique = [plan for plan in b.plans if asked[plan.text] == 1]  # a question asked twice has no single answer
    questions = tuple(
        Question(f"q{i:04d}", plan.kind, plan.text, tuple(where[t] for t in plan.tags), plan.answer, plan.topic)
        for i, plan in enumerate(unique, start=1)
    )
    return Dataset(seed, cast.user, tuple(built), questions)


# --- entries ----------------------------------------------------------------------------------------------------

OFFICES = ["lisbon", "berlin", "austin", "madrid", "dublin"]
POLICIES: list[tuple[str, str, str, str, str]] = [
    # (name stem, description, content — {o} office {n} a number, direct question, paraphrased question)
    ("refund-policy", "How customer refunds work at the {O} office",
     "Customers of the {O} office can ask for a refund within {n} days of purchase. Refunds go back to the original "
     "payment method within five working days.", "What is the refund policy in {O}?",
     "Can a client in {O} get their money back after buying something?"),
    ("parental-leave", "Parental leave for staff in {O}",
     "Staff in {O} get {n} weeks of fully paid parental leave, to be taken within the child's first year.",
     "How many weeks of parental leave do {O} staff get?",
     "How much time off do {O} employees have when a baby arrives?"),
    ("remote-work", "Remote work rules for the {O} team",
     "The {O} team may work remotely up to {n} days a week; Tuesdays are in-office days.",
     "How many remote work days are allowed in {O}?", "Can {O} people do their jobs from home, and how often?"),
    ("travel-expenses", "Travel expense limits, {O}",
     "Hotels are reimbursed up to {n0} euros a night for {O} employees; economy class for flights under six hours.",
     "What are the travel expense limits in {O}?", "How pricey a room can staff in {O} book when away on business?"),
    ("sick-days", "Sick days policy ({O})",
     "Employees in {O} need a doctor's note after {n1} consecutive sick days.",
     "When do {O} employees need a note for sick days?", "If I'm ill in {O}, when must I bring proof from a GP?"),
    ("laptop-replacement", "When {O} staff get a new laptop",
     "Laptops for {O} staff are replaced every {n1} years, or sooner if broken beyond repair.",
     "How often are laptops replaced in {O}?",
     "How often can someone in {O} swap their work computer for a newer one?"),
    ("overtime", "Overtime compensation in {O}",
     "Overtime in {O} is paid at 1.5x, or taken as time in lieu within {n1} months.",
     "How is overtime paid in {O}?", "What do {O} workers receive for extra hours beyond their contract?"),
    ("gifts-policy", "Accepting gifts from suppliers, {O}",
     "{O} employees may accept supplier gifts worth up to {n0} euros; anything more must be declared to compliance.",
     "What is the gifts policy for {O}?", "Can {O} staff keep presents that vendors send?"),
    ("security-badges", "Lost office badges in {O}",
     "A lost {O} office badge must be reported to facilities the same day; a replacement costs {n} euros.",
     "What happens if I lose my {O} badge?", "I misplaced my {O} access card, what now?"),
    ("training-budget", "Yearly learning budget, {O}",
     "Each {O} employee has a learning budget of {n0} euros a year for courses, books and conferences.",
     "How big is the training budget in {O}?", "How much can {O} staff spend on courses and education annually?"),
]

PRODUCTS = ["Aurora X2", "Nimbus Pro", "Kestrel Mini", "Orca 7", "Fennec Air", "Lumen S", "Basalt Max", "Tern Go",
            "Vega One", "Pika Lite", "Corvid 3", "Juniper Hub", "Halcyon 5", "Quill Duo", "Sable Prime", "Ibis Flex",
            "Marlin C", "Opal Home", "Wren 2", "Zephyr Plus"]
CATEGORIES = ["blender", "robot vacuum", "e-bike", "smart thermostat", "wireless speaker", "air purifier"]
ASPECTS: list[tuple[str, str, str, str, str]] = [
    # (aspect, description, content, direct question, paraphrased question) — {p} product {c} category
    ("warranty", "{p} warranty terms", "The {p} {c} comes with a {n1}-year warranty covering parts and labour.",
     "What warranty does the {p} have?", "If my {p} breaks after twelve months, will they fix it for free?"),
    ("battery", "{p} battery life", "On a full charge the {p} runs for about {n} hours; charging takes 3 hours.",
     "What is the battery life of the {p}?", "How long does the {p} last before it needs plugging in?"),
    ("dimensions", "{p} size and weight", "The {p} measures 30 x 20 x {n} cm and weighs {n1}.5 kg.",
     "What are the dimensions of the {p}?", "How big and heavy is the {p}?"),
    ("price", "{p} price and discounts", "The {p} retails at {n0} euros; members get 10% off.",
     "What is the price of the {p}?", "How much does a {p} cost to purchase?"),
    ("cleaning", "Cleaning and maintenance of the {p}",
     "Wipe the {p} with a damp cloth; descale or replace the filter every {n} weeks.",
     "How do I clean the {p}?", "What upkeep does the {p} need to stay in good shape?"),
    ("compatibility", "{p} app and device compatibility",
     "The {p} pairs with the companion app on Android 10+ and iOS 15+, and works with voice assistants.",
     "Is the {p} compatible with iOS?", "Can I use the {p} with my iPhone?"),
]

PEOPLE_PREFS: list[tuple[str, str, str, str, str]] = [
    # (kind, description, content, direct question, paraphrased question) — {u} a person
    ("seat", "{u}'s seat preference on flights", "{u} prefers an {seat} seat on flights and never checks a bag.",
     "What seat does {u} prefer on flights?", "Where does {u} like to sit on a plane?"),
    ("diet", "{u}'s dietary requirements", "{u} is {diet}; book restaurants with options for that.",
     "What are {u}'s dietary requirements?", "What food can {u} eat when we go out for dinner?"),
    ("contact", "How {u} likes to be contacted", "{u} prefers {channel} over email, and no calls before 10am.",
     "How does {u} like to be contacted?", "What's the best way to reach {u}?"),
    ("meetings", "{u}'s meeting preferences", "{u} likes meetings in the {slot} and at most 30 minutes long.",
     "When does {u} prefer meetings?", "What time of day is best to book a call with {u}?"),
    ("language", "{u}'s preferred language", "{u} prefers documents in {lang}, with a short summary in English.",
     "Which language does {u} prefer?", "In what tongue should reports to {u} be written?"),
    ("coffee", "{u}'s coffee order", "{u} drinks a {coffee}; bring one to the Monday review.",
     "What is {u}'s coffee order?", "What hot drink should I grab for {u}?"),
]
SEATS = ["aisle", "window", "exit-row"]
DIETS = ["vegan", "vegetarian", "gluten-free", "pescatarian", "halal"]
CHANNELS = ["Slack messages", "text messages", "WhatsApp", "a quick phone call"]
SLOTS = ["morning", "early afternoon", "late afternoon"]
COFFEES = ["flat white", "double espresso", "oat latte", "cortado", "black americano"]

PROCEDURES: list[tuple[str, str, str, str, str]] = [
    ("password-reset", "Resetting a user's password",
     "Open the admin console, find the user, choose Reset password and send the one-time link; it expires in 24 hours.",
     "How do I reset a user's password?", "Someone forgot their login credentials, how do I help them?"),
    ("new-hire-onboarding", "Onboarding a new hire",
     "Create the accounts two days before the start date, order a laptop, book the welcome lunch and assign a buddy.",
     "What are the steps for onboarding a new hire?", "What do we do before a recruit's first day?"),
    ("api-key-rotation", "Rotating API keys",
     "Create a new key, deploy it to every service, watch the error rate for an hour, then revoke the old key.",
     "How do we rotate API keys?", "How should secret tokens for our systems be replaced safely?"),
    ("month-end-close", "Closing the books at month end",
     "Reconcile the bank accounts, accrue unpaid invoices, review payroll and lock the period by the fifth.",
     "What is the month-end close procedure?", "What does finance do after the last working day of each period?"),
    ("incident-response", "Responding to a production incident",
     "Declare the incident in the channel, name an incident lead, post updates every 30 minutes and write a "
     "post-mortem within five days.", "What is the incident response procedure?",
     "The site is down, what's the process?"),
    ("expense-claims", "Submitting an expense claim",
     "Photograph the receipt, file the claim in the finance app within 30 days and pick the right cost centre.",
     "How do I submit an expense claim?", "How do I get reimbursed for something I paid for myself?"),
    ("office-moves", "Booking a desk move",
     "Ask facilities two weeks ahead; IT moves the monitors and phones on Friday afternoons.",
     "How do I book a desk move?", "I want to change where I sit, who arranges it?"),
    ("data-deletion-request", "Handling a customer's data deletion request",
     "Verify the requester's identity, delete their records in every system within 30 days and confirm in writing.",
     "How do we handle a data deletion request?", "A client wants us to erase everything we hold about them; "
                                                  "what do we do?"),
    ("vendor-onboarding", "Adding a new supplier",
     "Collect the tax details and bank letter, run the sanctions check, then create the vendor in the ERP.",
     "How do I add a new supplier?", "What's needed before we can pay a company we haven't used before?"),
    ("release-checklist", "Shipping a release",
     "Freeze the branch, run the full test suite, tag the version, deploy to staging, then to production at 10am.",
     "What is the release checklist?", "What steps happen before new software goes live?"),
    ("holiday-booking", "Requesting annual leave",
     "Request annual leave in the HR portal at least two weeks ahead; your manager approves within three days.",
     "How do I request annual leave?", "How do I ask for vacation days?"),
    ("visitor-access", "Registering an office visitor",
     "Register visitors at reception the day before; they must show photo ID and wear the guest lanyard.",
     "How do I register an office visitor?", "Someone is coming to see me at work, what do I arrange?"),
]
TEAMS_OF = ["support", "finance", "platform", "people", "sales", "legal", "design", "marketing"]

OFFTOPIC = [
    "What is the capital of Mongolia?", "Best lasagne recipe with ricotta", "Who won the 1998 World Cup?",
    "How far away is the moon?", "Lyrics of a famous Beatles song", "How do volcanoes form?",
    "Tips for growing orchids indoors", "What is the plot of Hamlet?", "How do I tie a bow tie?",
    "Why is the sky blue?", "Translate good night into Japanese", "How many legs does a spider have?",
    "Which planet has the most moons?", "What do pandas eat in the wild?", "Origin of the word quarantine",
    "How to juggle three balls", "Chess opening for beginners", "When did the Roman empire fall?",
    "Is a tomato a fruit or a vegetable?", "How do bees make honey?", "Rules of cricket explained simply",
    "What is the tallest mountain in Africa?", "How to fold a paper crane", "Best time to see the northern lights",
]


def _fill(template: str, slots: dict[str, str]) -> str:
    return template.format(**slots)


def make_entries(seed: int = 7) -> EntryDataset:
    """A few hundred entries in four memories (company policies, product facts, people's preferences,
    procedures), and direct, paraphrased and off-topic questions about them."""
    rng = random.Random(seed)
    entries: list[EntryItem] = []
    questions: list[EntryQuestion] = []

    def add(memory: str, name: str, description: str, content: str, direct: str, para: str) -> None:
        entries.append(EntryItem(memory, name, description[:200], content))
        for kind, text in (("direct", direct), ("paraphrased", para)):
            questions.append(EntryQuestion(f"e{len(questions) + 1:04d}", kind, memory, text, (name,)))

    def numbers() -> dict[str, str]:
        return {"n": str(rng.randrange(5, 40)), "n0": str(rng.randrange(10, 60) * 10), "n1": str(rng.randrange(2, 6))}

    for office in OFFICES:
        for stem, desc, content, direct, para in POLICIES:
            slots = {"O": office.capitalize(), **numbers()}
            add("company", f"{stem}.{office}", _fill(desc, slots), _fill(content, slots),
                _fill(direct, slots), _fill(para, slots))
    for product in PRODUCTS:
        category = rng.choice(CATEGORIES)
        for aspect, desc, content, direct, para in ASPECTS:
            slots = {"p": product, "c": category, **numbers()}
            add("products", f"{product.lower().replace(' ', '-')}.{aspect}", _fill(desc, slots),
                _fill(content, slots), _fill(direct, slots), _fill(para, slots))
    for person in rng.sample(FIRST_NAMES, 25):
        for kind, desc, content, direct, para in PEOPLE_PREFS:
            slots = {"u": person, "seat": rng.choice(SEATS), "diet": rng.choice(DIETS), "channel": rng.choice(CHANNELS),
                     "slot": rng.choice(SLOTS), "lang": rng.choice(LANGUAGES), "coffee": rng.choice(COFFEES)}
            add("preferences", f"pref.{person.lower()}.{kind}", _fill(desc, slots), _fill(content, slots),
                _fill(direct, slots), _fill(para, slots))
    for team in TEAMS_OF:
        for name, desc, content, direct, para in PROCEDURES:
            # each team keeps its own copy of the procedures, with its name in it
            add("procedures", f"{team}.{name}", f"{desc} ({team} team)", f"For the {team} team: {content}",
                f"{direct.rstrip('?')} in {team}?", f"{para} (I'm on the {team} team)")
    memories = sorted({e.memory for e in entries})
    for i, text in enumerate(OFFTOPIC):
        questions.append(EntryQuestion(f"e{len(questions) + 1:04d}", "offtopic", memories[i % len(memories)], text, ()))
    return EntryDataset(seed, tuple(entries), tuple(questions))


# --- the same conversation as a transcript ---------------------------------------------------------------------

ASSISTANT_NAME = "Assistant"
_THIRD_PERSON = tuple((re.compile(pattern), replacement) for pattern, replacement in (
    (r"\bAm I\b", "Is {u}"), (r"\bam I\b", "is {u}"), (r"\bDo I\b", "Does {u}"), (r"\bdo I\b", "does {u}"),
    (r"\bHave I\b", "Has {u}"), (r"\bhave I\b", "has {u}"), (r"\bWas I\b", "Was {u}"), (r"\bI'm\b", "{u} is"),
    (r"\bI've\b", "{u} has"), (r"\bI\b", "{u}"), (r"\b[Mm]y\b", "{u}'s"), (r"\bme\b", "{u}"),
    (r"\bmine\b", "{u}'s"),
))


def as_transcript(data: Dataset) -> Dataset:
    """The same conversation as public long-conversation benchmarks often hand it to a memory: a transcript
    whose every line opens with its speaker's name (``Sam: …``, ``Assistant: …``), and the questions asked
    about the user by name, in the third person ("When did Sam move to Hamburg?" for "When did I move to
    Hamburg?"). The evidence is the same messages. It tries the search on a name that every other line holds
    and every question asks about — which says nothing about the message meant."""
    name = data.user

    def line(message: Message) -> Message:
        speaker = name if message.role == "user" else ASSISTANT_NAME
        return Message(message.role, f"{speaker}: {message.content}")

    def third(text: str) -> str:
        for pattern, replacement in _THIRD_PERSON:
            text = pattern.sub(replacement.format(u=name), text)
        return text

    sessions = tuple(Session(s.key, s.date, tuple(line(m) for m in s.messages)) for s in data.sessions)
    questions = tuple(replace(q, text=third(q.text)) for q in data.questions)
    return Dataset(data.seed, data.user, sessions, questions)


# --- a look at the data ---------------------------------------------------------------------------------------


def kinds(questions: Sequence[Question] | Sequence[EntryQuestion]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for q in questions:
        counts[q.kind] = counts.get(q.kind, 0) + 1
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print a sample of the recall benchmark's data")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sessions", type=int, default=300)
    args = parser.parse_args(argv)
    data = make_conversations(args.seed, args.sessions)
    show: Callable[[str], None] = print
    show(f"user {data.user}: {len(data.sessions)} sessions, {data.message_count} messages, "
         f"{len(data.questions)} questions {kinds(data.questions)}")
    rng = random.Random(args.seed)
    for q in rng.sample(list(data.questions), 12):
        show(f"[{q.kind}] {q.text}  ->  {q.answer}")
        for g in q.gold:
            show(f"      {g}: {data.text(g)}")
    entries = make_entries(args.seed)
    show(f"{len(entries.entries)} entries in {entries.memories}, {len(entries.questions)} questions "
         f"{kinds(entries.questions)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
