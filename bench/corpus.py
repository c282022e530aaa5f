"""Deterministic benchmark data: memory entries of a few hundred characters of varied English.

Nothing is downloaded. Words come from the lists below and are drawn with Zipf-like
frequencies (a few common words, a long tail of rare ones), as in real notes, so a
search word matches anything from a handful to most of a layer's entries.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


def _words(text: str) -> list[str]:
    # word lists read best as running text
    return text.split()


NOUNS = _words(
    """
account address advice agenda agreement airline allergy analysis answer apartment appointment approval
archive area argument arrival article assistant audit author availability baggage balance bank basket battery
bedroom benefit bill birthday blanket blog board boat booking bottle boundary branch brand breakfast bridge
budget bug building bundle bus calendar campaign candidate capacity car card career cart catalog category
ceiling chair channel chapter charge chart checklist chef child choice city claim class client climate clinic
coach coat code coffee colleague collection color comment commitment community company complaint component
concert condition conference confirmation connection contract contractor conversation cookie copy corner cost
country coupon course court cousin coverage credit crew culture cup currency customer cycle dashboard data
database date daughter deadline deal decision degree delay delivery department deposit design desk detail
device diagnosis diet dinner director discount discussion dish display district doctor document dog donation
draft dress driver duty editor education effort election email employee engine engineer entrance equipment
error estimate evening event evidence exam example exchange exercise expense experience expert factory family
farm fashion feature fee feedback festival field file film finance fish flight floor flower folder food forecast
forest form formula friend fruit fund furniture game garage garden gate gift goal grant grocery group growth
guest guide gym habit hall hardware headline health hearing heating highway history holiday home hospital host
hotel hour house housing idea image import incident income industry insurance interest interview inventory
invoice island issue item jacket job journal journey kitchen knowledge label lake language laptop launch lawyer
layout lead lease lecture ledger lesson letter library licence limit list loan location lunch machine magazine
manager manual map market marketing meal measure media medicine meeting member memo menu message method metric
milestone mirror mobile model module moment month morning mortgage mountain movie museum music neighbour network
newsletter night note notice number nurse office offer order outline owner package page painting panel paper
parcel parent park partner party passenger patient payment pension people period permit person pharmacy phone
photo piano picture pilot plan plant platform player pocket podcast policy portfolio position poster practice
preference premium presentation price printer priority problem process product profile program project
promotion property proposal prospect purchase quarter question queue quote radio rate reader receipt recipe
record refund region release reminder rent repair report request research reservation resource response
restaurant result review reward risk road role roof room route routine rule salary sale sample schedule school
science score screen season seat section sector seminar server service session shift shipment shop shoulder
signature site size skill software solution song source speaker speech sport staff stage standard station
statement status stock storage store story strategy street student studio style subject subscription summary
supplier supply support survey sweater table target task tax teacher team template tenant term test theme
ticket timeline tone topic tour traffic training transfer travel treatment trip truck tutorial update upgrade
user vacation value vehicle vendor venue version video village visit visitor voice volunteer voucher wallet
warehouse warranty water weather website wedding week weekend window winter workflow workshop writer year
"""
)

VERBS = _words(
    """
accept add adjust advise allow analyse answer apply approve arrange ask assign attach avoid book bring build
calculate call cancel change charge check choose clean close collect compare complete confirm connect consider
contact copy correct cover create deliver describe design discuss double-check draft drop edit email enable
escalate estimate explain export fetch file fill find finish fix follow forward gather handle help highlight
hire include inform install invite keep label list load log mail manage mark measure mention merge move note
notify offer open order organise pack pay plan post prepare present print prioritise process publish record
recommend reduce refund remind remove rename renew repair replace reply report request reschedule reserve
resolve respond restore return review revise schedule send share ship sign sort split start store submit
suggest summarise supply support switch tag test track transfer translate update upload verify visit wait
warn watch write
"""
)

ADJECTIVES = _words(
    """
active annual appropriate available basic big brief broad busy careful casual central cheap clear close cold
common complete complex concise correct costly critical current daily dark decent default detailed different
direct early easy effective efficient electric empty essential exact expensive express extra fair familiar
fast final firm flexible formal fresh friendly full general generous gentle global good green handy happy heavy
helpful high honest huge important initial internal international key large late light likely local long loud
loyal main major manual medium minor mobile modern monthly narrow natural neat new nice normal official old
online open optional ordinary original outdoor overdue paid partial patient pending personal plain pleasant
polite popular positive practical precise premium previous primary private prompt proper public quick quiet
rare ready recent regular related relevant remote reliable urgent rough safe seasonal secure senior separate
serious short signed simple single slow small smart soft special spicy standard steady strict strong
suitable summer sunny sweet technical temporary tight tiny total tough typical unusual useful usual valid
vegetarian visible warm weekly whole wide wooden yearly young
"""
)

ADVERBS = _words(
    """
always usually often sometimes rarely quickly carefully politely clearly briefly directly early gently
promptly regularly weekly daily first later soon
"""
)

PEOPLE = _words(
    """
Ada Alice Amir Anna Ben Carla Chen Dana David Elena Emma Farah Felix Grace Hana Hugo Ines Ivan Jade James
Jonas Julia Kai Karim Laura Leo Lina Lucas Maya Mia Nadia Noah Nora Omar Oscar Paula Priya Rosa Ruth Sam Sara
Sofia Tara Theo Tom Vera Yusuf Zoe
"""
)

PLACES = _words(
    """
Lisbon Berlin Madrid Oslo Dublin Paris Vienna Prague Warsaw Zurich Geneva Munich Lyon Porto Seville Bristol
Leeds Glasgow Boston Denver Austin Seattle Toronto Montreal Sydney Melbourne Auckland Nairobi Lagos Cairo
Tokyo Osaka Seoul Singapore Mumbai Delhi Manila Jakarta Lima Quito
"""
)

DAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
MONTHS = _words("January February March April May June July August September October November December")
CATEGORIES = ["note", "preference", "fact", "procedure", "policy", "person", "project", "decision"]

SENTENCES = [
    "{P} prefers {a} {n} for the {n} {n}.",
    "When a {n} asks about the {n}, {v} the {a} {n} first.",
    "Always {v} the {n} before the {n} {n} goes out.",
    "Do not {v} a {n} without a {a} {n} from the {n} team.",
    "We {v} {a} {n} through the {n} {n} every {D}.",
    "{P} from {L} said the {n} should {v} the {n} by {M}.",
    "Remember that the {n} and the {n} are {a} in {M}.",
    "If the {n} is {a}, {v} it to the {n} {n} and tell {P}.",
    "The {a} {n} for {L} is kept in the {n} {n}.",
    "{P} {x} asks for a {a} {n} with the {n}.",
    "Our {n} {n} changed in {M}: {v} the {a} {n} instead of the {n}.",
    "For {a} {n}, the {n} is handled by {P} in {L}.",
    "Please {v} the {n} {x}; the {n} depends on it.",
    "The {n} meets on {D} to {v} the {n} {n} and the {a} {n}.",
    "{P} does not like {a} {n}; suggest a {a} {n} or a {n} instead.",
    "Use a {a} tone in every {n} about the {n}.",
    "A {a} {n} usually means the {n} is {a}, so {v} the {n}.",
    "The last {n} with {P} was about the {n} and its {a} {n}.",
    "Keep the {n} {a} and {a}; {P} reads it on {D}.",
    "The {n} in {L} opens at nine and the {n} {n} closes at six.",
    "Ask {P} before you {v} any {n} above the usual {n}.",
    "Customers in {L} {x} want the {a} {n} with a {n}.",
    "Escalate a {a} {n} to {P} when the {n} is late.",
    "Our {a} {n} lasts until {M} and covers the {n} and the {n}.",
    "The {n} template needs a {a} {n} and a {n} line.",
]

DESCRIPTIONS = [
    "{A} {n} {n} for {P}",
    "How we {v} the {n} {n}",
    "{P}'s {a} {n} preferences",
    "Notes on the {n} and the {n}",
    "{A} {n} rules for {L}",
    "What to do when a {n} is {a}",
    "The {n} {n} of the {n} team",
    "{P} on the {a} {n} in {L}",
    "Checklist: {v} the {n} {n}",
    "{A} {n} and {n} policy",
]


def _zipf_weights(count: int, exponent: float = 1.0) -> list[float]:
    return [1.0 / (rank**exponent) for rank in range(1, count + 1)]


class _Picker:
    """Draws words with Zipf-like frequencies; which word is common is itself chosen by the seed."""

    def __init__(self, words: list[str], rng: random.Random) -> None:
        self.words = list(words)
        rng.shuffle(self.words)
        self.weights = _zipf_weights(len(self.words))
        total = 0.0
        self.cumulative: list[float] = []
        for weight in self.weights:
            total += weight
            self.cumulative.append(total)

    def __call__(self, rng: random.Random) -> str:
        return rng.choices(self.words, cum_weights=self.cumulative, k=1)[0]


@dataclass(frozen=True)
class EntryData:
    layer: int
    name: str
    description: str
    content: str
    category: str
    importance: float

    def value(self) -> dict[str, object]:
        """The entry as a LangGraph store value."""
        return {
            "description": self.description,
            "content": self.content,
            "category": self.category,
            "importance": self.importance,
        }


# Words a query never uses: the glue of the sentence templates (every entry has some of them).
_STOP = frozenset(
    word.strip(".,;:'").lower()
    for template in (*SENTENCES, *DESCRIPTIONS)
    for word in template.replace("'s", " ").split()
    if "{" not in word
)


class Corpus:
    """``layers`` × ``per_layer`` entries and a list of search queries, all from one seed."""

    def __init__(self, seed: int = 20_261_130) -> None:
        rng = random.Random(seed)
        self._seed = seed
        self.nouns = _Picker(NOUNS, rng)
        self.verbs = _Picker(VERBS, rng)
        self.adjectives = _Picker(ADJECTIVES, rng)
        self.adverbs = _Picker(ADVERBS, rng)
        self.people = _Picker(PEOPLE, rng)
        self.places = _Picker(PLACES, rng)

    def _fill(self, template: str, rng: random.Random) -> str:
        out: list[str] = []
        i = 0
        while i < len(template):
            ch = template[i]
            if ch == "{" and template[i + 2] == "}":
                slot = template[i + 1]
                word = {
                    "n": self.nouns,
                    "v": self.verbs,
                    "a": self.adjectives,
                    "A": self.adjectives,
                    "x": self.adverbs,
                    "P": self.people,
                    "L": self.places,
                }.get(slot)
                if word is not None:
                    text = word(rng)
                    out.append(text.capitalize() if slot == "A" else text)
                elif slot == "D":
                    out.append(rng.choice(DAYS))
                elif slot == "M":
                    out.append(rng.choice(MONTHS))
                i += 3
                continue
            out.append(ch)
            i += 1
        return "".join(out)

    def entry(self, layer: int, index: int, revision: int = 0) -> EntryData:
        """Entry ``index`` of ``layer``; a later ``revision`` keeps the name and changes the text."""
        rng = random.Random(f"{self._seed}:{layer}:{index}:{revision}")
        name_rng = random.Random(f"{self._seed}:{layer}:{index}:name")
        name = f"{self.nouns(name_rng)}-{self.nouns(name_rng)}-{index:03d}"
        description = self._fill(rng.choice(DESCRIPTIONS), rng)
        sentences = [self._fill(rng.choice(SENTENCES), rng) for _ in range(rng.randint(3, 7))]
        paragraphs = [" ".join(sentences[: len(sentences) // 2]), " ".join(sentences[len(sentences) // 2 :])]
        content = "\n\n".join(p for p in paragraphs if p)
        return EntryData(
            layer=layer,
            name=name,
            description=description,
            content=content,
            category=rng.choice(CATEGORIES),
            importance=round(rng.random(), 2),
        )

    def entries(self, layers: int, per_layer: int) -> list[EntryData]:
        """Every entry, layer-major: ``entries[layer * per_layer + index]``."""
        return [self.entry(layer, index) for layer in range(layers) for index in range(per_layer)]

    @staticmethod
    def queries(entries: list[EntryData], count: int, seed: int = 7) -> list[tuple[int, str]]:
        """(layer, query) pairs: 1–3 words a person might type, taken from a random entry's text."""
        rng = random.Random(seed)
        out: list[tuple[int, str]] = []
        while len(out) < count:
            entry = rng.choice(entries)
            words = [
                w.strip(".,;:'").lower()
                for w in f"{entry.description} {entry.content}".replace("'s", "").split()
            ]
            pool = sorted({w for w in words if w.isalpha() and w not in _STOP and len(w) > 2})
            if not pool:
                continue
            size = rng.choices([1, 2, 3], weights=[4, 4, 2], k=1)[0]
            out.append((entry.layer, " ".join(rng.sample(pool, min(size, len(pool))))))
        return out
