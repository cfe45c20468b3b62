"""Generate the small synthetic LongMemEval-format dataset shipped with the plugin.

The command (its parser, ``main()`` and help text) is ``lme/cli/sample_data.py``."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Sequence

from lme.core.errors import UserError
SEED = 20261129

_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")

Turn = dict[str, Any]


def format_date(moment: datetime) -> str:
    """``%Y/%m/%d (%a) %H:%M`` with English weekday names whatever the locale."""
    return f"{moment:%Y/%m/%d} ({_WEEKDAYS[moment.weekday()]}) {moment:%H:%M}"


def u(text: str, evidence: bool = False) -> Turn:
    return {"role": "user", "content": text, "has_answer": evidence}


def a(text: str, evidence: bool = False) -> Turn:
    return {"role": "assistant", "content": text, "has_answer": evidence}


@dataclass(frozen=True)
class ItemSpec:
    key: str
    """Seeds the item's hex id; stable across edits of other items."""
    question_type: str
    question: str
    answer: str | int
    asked: datetime
    evidence: tuple[tuple[datetime, tuple[Turn, ...]], ...]
    fillers: int = 4
    abstention: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def D(y: int, m: int, d: int, hh: int = 10, mm: int = 0) -> datetime:  # noqa: N802 - reads like a date literal
    return datetime(y, m, d, hh, mm)


# --------------------------------------------------------------------------- filler conversations (no gold)

FILLERS: tuple[tuple[str, tuple[Turn, ...]], ...] = (
    ("sharegpt", (
        {"role": "user", "content": "Can you explain the difference between a list and a tuple in Python?"},
        {"role": "assistant", "content": "A list is mutable, so you can add or remove elements after creating it. "
         "A tuple is immutable, which makes it hashable and a good fit for fixed records or dictionary keys."},
        {"role": "user", "content": "When would a tuple be faster?"},
        {"role": "assistant", "content": "Creating and iterating a tuple is slightly cheaper because Python can "
         "allocate it once. The difference rarely matters; choose by meaning, not speed."},
    )),
    ("ultrachat", (
        {"role": "user", "content": "What were the main causes of the decline of the Hanseatic League?"},
        {"role": "assistant", "content": "Historians point to the rise of territorial states, new Atlantic trade "
         "routes, competition from Dutch and English merchants, and the League's loose, consensus-based structure."},
    )),
    ("sharegpt", (
        {"role": "user", "content": "Write a short haiku about autumn rain on a tin roof."},
        {"role": "assistant", "content": "Tin roof drumming soft / maple leaves ride the gutter / the kettle answers."},
        {"role": "user", "content": "Make it a little more melancholy."},
        {"role": "assistant", "content": "Rain on the tin roof / one cup left on the table / the porch light stays on."},
    )),
    ("ultrachat", (
        {"role": "user", "content": "How do coral reefs protect coastlines from storms?"},
        {"role": "assistant", "content": "Reefs act as natural breakwaters: their rough structure makes waves break "
         "offshore and can dissipate most of the wave energy before it reaches the beach."},
    )),
    ("sharegpt", (
        {"role": "user", "content": "Draft a polite email asking my landlord when the hallway lights will be fixed."},
        {"role": "assistant", "content": "Subject: Hallway lighting\n\nHello, I wanted to check whether there is a date "
         "for repairing the hallway lights on our floor. It is quite dark in the evenings. Thank you for your help."},
    )),
    ("ultrachat", (
        {"role": "user", "content": "What is the best way to store fresh herbs like basil and cilantro?"},
        {"role": "assistant", "content": "Treat basil like cut flowers in a glass of water at room temperature. "
         "Cilantro keeps longer in the fridge, stems in water and loosely covered with a bag."},
        {"role": "user", "content": "And rosemary?"},
        {"role": "assistant", "content": "Wrap woody herbs such as rosemary and thyme in a slightly damp paper towel "
         "and keep them in the fridge; they last one to two weeks."},
    )),
    ("sharegpt", (
        {"role": "user", "content": "Summarize the plot of Hamlet in three sentences."},
        {"role": "assistant", "content": "Prince Hamlet learns from his father's ghost that his uncle Claudius murdered "
         "the king. He feigns madness while seeking proof and revenge. The delay ends in a duel in which nearly "
         "everyone, Hamlet included, dies."},
    )),
    ("ultrachat", (
        {"role": "user", "content": "Which renewable energy sources work best in cloudy northern climates?"},
        {"role": "assistant", "content": "Wind power, hydropower and heat pumps usually outperform solar there, "
         "although modern solar panels still produce a useful share even under overcast skies."},
    )),
    ("sharegpt", (
        {"role": "user", "content": "How do I center a div horizontally and vertically with CSS?"},
        {"role": "assistant", "content": "Make the parent a flex container with justify-content: center and "
         "align-items: center, or use display: grid with place-items: center."},
    )),
    ("ultrachat", (
        {"role": "user", "content": "What are some good stretches to do after a long day at a desk?"},
        {"role": "assistant", "content": "Try a doorway chest stretch, neck side bends, seated spinal twists and a "
         "standing hip flexor stretch, holding each for about thirty seconds."},
    )),
    ("sharegpt", (
        {"role": "user", "content": "Give me three icebreaker questions for a team meeting."},
        {"role": "assistant", "content": "What is a small thing that made your week better? Which skill would you "
         "learn instantly if you could? What was your first job?"},
    )),
    ("ultrachat", (
        {"role": "user", "content": "Explain how compound interest works with a simple example."},
        {"role": "assistant", "content": "Interest is added to the balance, and the next period's interest is "
         "computed on that larger balance. At 5% a year, 1,000 becomes 1,050 after one year and 1,102.50 after two."},
    )),
    ("sharegpt", (
        {"role": "user", "content": "Translate 'Where is the train station?' into German and Italian."},
        {"role": "assistant", "content": "German: Wo ist der Bahnhof? Italian: Dov'è la stazione?"},
    )),
    ("ultrachat", (
        {"role": "user", "content": "Why do cats knead blankets?"},
        {"role": "assistant", "content": "Kneading is a behaviour kept from kittenhood, when it helps milk flow. "
         "Adult cats knead when relaxed, and it also leaves scent from glands in their paws."},
    )),
    ("sharegpt", (
        {"role": "user", "content": "Suggest a name for a small bakery that specialises in rye bread."},
        {"role": "assistant", "content": "A few ideas: Rye and Shine, The Dark Crumb, Caraway Corner, Hearth and Grain."},
    )),
    ("ultrachat", (
        {"role": "user", "content": "How does a bill become a law in a parliamentary system?"},
        {"role": "assistant", "content": "A bill is introduced, debated and amended in readings and committee stages, "
         "passed by the chamber or chambers, and then receives formal assent from the head of state."},
    )),
)


# --------------------------------------------------------------------------- the items (our own wording)

SPECS: tuple[ItemSpec, ...] = (
    # single-session-user
    ItemSpec("ssu-dog", "single-session-user", "What breed is my dog Biscuit?", "a beagle mix", D(2023, 5, 28, 19, 47), (
        (D(2023, 5, 21, 19, 50), (
            u("I just adopted Biscuit, a beagle mix from the shelter on Elm Street, and I need advice on crate "
              "training him.", True),
            a("Congratulations on adopting Biscuit! Start with short crate sessions, give treats inside the crate, "
              "and never use it as punishment."),
            u("How long can he stay in the crate during the day?"),
            a("Young dogs should not stay crated more than three or four hours at a time."),
        )),
    ), fillers=5),
    ItemSpec("ssu-bachelorette", "single-session-user", "Where did I go for my sister's bachelorette weekend?",
             "Asheville", D(2023, 6, 14, 9, 5), (
        (D(2023, 6, 3, 16, 20), (
            u("Can you help me design a photo book? My sister's bachelorette weekend in Asheville was so much fun "
              "and I want to surprise her with one.", True),
            a("What a lovely gift! Group the photos by day, add short captions, and leave a page for a note from "
              "each guest."),
        )),
    ), fillers=4),
    ItemSpec("ssu-cello", "single-session-user", "What instrument did I start learning this spring?", "the cello",
             D(2023, 4, 30, 21, 10), (
        (D(2023, 4, 12, 18, 2), (
            u("I'm looking for practice routines. I started taking cello lessons this spring with a teacher who "
              "lives two blocks away.", True),
            a("A good routine: ten minutes of open-string bowing, ten minutes of scales, then the piece your "
              "teacher assigned."),
            u("Should I practise every day?"),
            a("Short daily sessions beat one long weekly session, especially for building bow control."),
        )),
    ), fillers=6),
    ItemSpec("ssu-commute", "single-session-user", "How long is my commute to the new office?", "45 minutes",
             D(2023, 8, 20, 8, 15), (
        (D(2023, 8, 9, 7, 40), (
            u("Any podcast recommendations? My commute to the new office is about 45 minutes each way by train.",
              True),
            a("For a 45-minute ride, try history or science shows with episodes of that length."),
        )),
    ), fillers=4),
    # single-session-assistant
    ItemSpec("ssa-sourdough", "single-session-assistant",
             "In our chat about sourdough, what hydration did you recommend for my first loaf?", "70%",
             D(2023, 3, 18, 12, 30), (
        (D(2023, 3, 2, 20, 11), (
            u("I want to bake my first sourdough loaf this weekend. Where should I start?"),
            a("For a first loaf, start at 70% hydration: it is forgiving to shape. Use a ripe starter and "
              "let the dough bulk ferment until it grows by about half.", True),
            u("How do I know the starter is ripe?"),
            a("It should have doubled since feeding and smell pleasantly sour; a spoonful floats in water."),
        )),
    ), fillers=4),
    ItemSpec("ssa-stretch", "single-session-assistant",
             "What was the third stretch you suggested for my lower back?", "the cat-cow stretch",
             D(2023, 7, 9, 17, 0), (
        (D(2023, 6, 27, 22, 45), (
            u("My lower back is stiff after gardening. Which stretches would help?"),
            a("Try these in order: first, child's pose; second, knee-to-chest; third, the cat-cow stretch, "
              "moving slowly with your breath.", True),
        )),
    ), fillers=5),
    ItemSpec("ssa-boardgame", "single-session-assistant",
             "Which board game did you recommend for my family of five that plays in under an hour?",
             "Ticket to Ride", D(2023, 12, 20, 18, 25), (
        (D(2023, 12, 4, 19, 30), (
            u("We are five at home and want a board game for weeknights. It has to finish in under an hour."),
            a("I recommend Ticket to Ride: it supports five players, teaches in ten minutes and usually ends "
              "within an hour.", True),
            u("Is it fine for a nine-year-old?"),
            a("Yes, the rules are simple enough for that age."),
        )),
    ), fillers=4),
    # single-session-preference (answers are rubrics)
    ItemSpec("ssp-recipe", "single-session-preference", "Can you suggest a recipe I could try this weekend?",
             "The user would prefer vegetarian Mediterranean recipes that can be cooked in a cast-iron skillet, "
             "building on what they have been cooking lately. They would not prefer meat dishes or recipes that "
             "need special equipment.", D(2023, 9, 15, 11, 0), (
        (D(2023, 9, 2, 13, 5), (
            u("I've been cooking a lot of vegetarian Mediterranean dishes in my cast-iron skillet lately. How do "
              "I keep the seasoning in good shape?", True),
            a("Dry it on the stove after washing, wipe on a thin layer of oil, and avoid long simmering of very "
              "acidic sauces."),
        )),
    ), fillers=5),
    ItemSpec("ssp-reading", "single-session-preference", "What should I read on my flight next week?",
             "The user would prefer historical fiction, ideally set in the nineteenth century, in audiobook form "
             "since they listen while travelling. They would not prefer thrillers or non-fiction.",
             D(2023, 10, 2, 8, 40), (
        (D(2023, 9, 21, 21, 15), (
            u("I just finished an audiobook of a historical novel set in 1860s London and loved it. I mostly "
              "listen to historical fiction when I travel; thrillers stress me out.", True),
            a("That sounds like a great listen. Narration matters a lot for period novels."),
        )),
    ), fillers=4),
    ItemSpec("ssp-weekend", "single-session-preference", "Any ideas for something relaxing to do this weekend?",
             "The user would prefer quiet outdoor activities such as hikes to lakes or early-morning walks away "
             "from crowds. They would not prefer busy events, shopping or crowded attractions.",
             D(2023, 7, 21, 19, 0), (
        (D(2023, 7, 8, 9, 30), (
            u("Last Saturday I hiked to a small lake at sunrise and had the trail to myself. Crowds drain me, so "
              "that was perfect.", True),
            a("Sunrise hikes are a great way to avoid crowds. Bring a headlamp for the start."),
        )),
    ), fillers=6),
    # multi-session (two with integer answers)
    ItemSpec("ms-citrus", "multi-session", "How many citrus trees have I planted in my backyard?", 3,
             D(2023, 5, 30, 14, 2), (
        (D(2023, 4, 16, 10, 20), (
            u("I planted a Meyer lemon tree in the backyard today. How often should I water it?", True),
            a("Water deeply once or twice a week, letting the top few centimetres of soil dry out in between."),
        )),
        (D(2023, 5, 20, 15, 45), (
            u("I added a kumquat and a Bearss lime tree next to my lemon this weekend. Do they need different "
              "fertiliser?", True),
            a("A citrus-specific fertiliser works for all of them; feed lightly every six weeks in the growing "
              "season."),
        )),
    ), fillers=4),
    ItemSpec("ms-concerts", "multi-session",
             "How much did I spend in total on the two concert tickets I bought in April?", "$210",
             D(2023, 5, 10, 20, 0), (
        (D(2023, 4, 5, 12, 10), (
            u("I bought a ticket for the jazz festival for $85. What should I bring to an outdoor concert?", True),
            a("Bring a blanket, water, sunscreen and a light jacket for the evening."),
        )),
        (D(2023, 4, 22, 18, 35), (
            u("Got my ticket to see the symphony play Mahler for $125! Any tips for a first classical concert?",
              True),
            a("Arrive early, read the programme notes, and hold applause until the end of the whole symphony."),
        )),
    ), fillers=3),
    ItemSpec("ms-books", "multi-session", "How many novels did I finish in March?", 2, D(2023, 4, 8, 22, 10), (
        (D(2023, 3, 9, 21, 0), (
            u("I finished 'The Overstory' last night and I can't stop thinking about trees. Any similar novels?",
              True),
            a("You might enjoy novels that weave nature and people together, such as works by Barbara Kingsolver."),
        )),
        (D(2023, 3, 27, 22, 30), (
            u("Just finished 'Piranesi' today. What did you think of the ending?", True),
            a("The ending is quietly hopeful; the narrator keeps his sense of wonder while facing the truth."),
        )),
    ), fillers=4),
    ItemSpec("ms-worktrips", "multi-session", "Which two cities did I visit for work trips this spring?",
             "Denver and Portland", D(2023, 6, 18, 10, 30), (
        (D(2023, 3, 24, 6, 55), (
            u("I'm flying to Denver for a work trip next week. Any tips for the altitude?", True),
            a("Drink plenty of water, go easy on alcohol the first day, and use sunscreen."),
        )),
        (D(2023, 5, 11, 19, 20), (
            u("Back from my work trip to Portland. Can you help me write a short trip report for my manager?",
              True),
            a("Sure: start with the goals, then the meetings held, outcomes, and next steps."),
        )),
    ), fillers=3),
    # temporal-reasoning (day differences and order)
    ItemSpec("tr-pottery", "temporal-reasoning",
             "How many days passed between my first pottery class and the day I fired my first bowl?",
             "18 days. 19 days (including the last day) is also acceptable.", D(2023, 2, 25, 16, 0), (
        (D(2023, 1, 28, 18, 30), (
            u("Today I had my first pottery class! The wheel is much harder than it looks.", True),
            a("Centering the clay takes practice; most beginners need several sessions before it clicks."),
        )),
        (D(2023, 2, 15, 20, 5), (
            u("I fired my first bowl in the kiln today. It is a little lopsided but I love it.", True),
            a("Congratulations! A lopsided first bowl has character."),
        )),
    ), fillers=4),
    ItemSpec("tr-home", "temporal-reasoning",
             "Which did I do first, paint the kitchen or replace the bathroom faucet?", "Painting the kitchen",
             D(2023, 6, 30, 13, 0), (
        (D(2023, 6, 6, 17, 40), (
            u("I finished painting the kitchen today, a soft sage green. How long before I can hang things?", True),
            a("Wait at least a day or two for the paint to cure before hanging anything."),
        )),
        (D(2023, 6, 19, 11, 25), (
            u("I replaced the bathroom faucet myself today. Should I check the connections again later?", True),
            a("Yes, check for drips under the sink after a day of normal use."),
        )),
    ), fillers=4),
    ItemSpec("tr-spanish", "temporal-reasoning", "How many weeks ago did I start my Spanish course?",
             "3 weeks ago", D(2023, 11, 22, 9, 0), (
        (D(2023, 11, 1, 19, 0), (
            u("I started my Spanish course today. What are good apps to practise vocabulary?", True),
            a("Spaced-repetition flashcard apps work well for vocabulary; add a podcast for listening."),
        )),
    ), fillers=5),
    # knowledge-update (old and new value)
    ItemSpec("ku-5k", "knowledge-update", "What is my current personal best in the 5K?", "25:55",
             D(2023, 10, 14, 8, 0), (
        (D(2023, 6, 11, 9, 10), (
            u("I ran a 5K personal best of 27:40 this morning! How do I get faster?", True),
            a("Add one interval session a week and keep most other runs easy."),
        )),
        (D(2023, 9, 24, 10, 20), (
            u("New personal best at the park run today: 25:55 for the 5K.", True),
            a("That is a big improvement since the summer. Well done!"),
        )),
    ), fillers=3),
    ItemSpec("ku-gym", "knowledge-update", "Which gym am I a member of now?", "Summit Fitness",
             D(2023, 11, 5, 18, 0), (
        (D(2023, 2, 14, 7, 15), (
            u("I signed up at Iron Works gym near my office. Can you suggest a beginner strength plan?", True),
            a("Three full-body sessions a week with squats, presses, rows and deadlifts is a good start."),
        )),
        (D(2023, 9, 3, 12, 0), (
            u("I cancelled Iron Works and joined Summit Fitness because it has a pool. What swim workouts would "
              "suit a beginner?", True),
            a("Start with intervals of one length swimming and a short rest, building up over the weeks."),
        )),
    ), fillers=4),
    ItemSpec("ku-plants", "knowledge-update", "How many houseplants do I have now?", 15, D(2023, 8, 1, 20, 0), (
        (D(2023, 3, 5, 14, 30), (
            u("I have 12 houseplants and some leaves are turning yellow. What could cause that?", True),
            a("Overwatering is the most common cause; check that pots drain well."),
        )),
        (D(2023, 7, 16, 16, 10), (
            u("I bought three more at the plant swap, so I now have 15 houseplants. How do I fit them near the "
              "windows?", True),
            a("Use a tiered plant stand so every plant gets some light."),
        )),
    ), fillers=4),
    # abstention (ids carry _abs; they keep their base type)
    ItemSpec("abs-guitar", "multi-session", "How many guitar lessons have I taken in total?",
             "The information provided is not enough. You mentioned piano lessons but not guitar lessons.",
             D(2023, 6, 2, 21, 0), (
        (D(2023, 4, 4, 18, 0), (
            u("I had my second piano lesson today and my hands are tired. Any warm-up exercises?", True),
            a("Gentle finger stretches and slow five-finger patterns are good warm-ups."),
        )),
        (D(2023, 5, 9, 18, 10), (
            u("Piano lesson number five today, and I finally played the whole minuet.", True),
            a("That's real progress in a short time!"),
        )),
    ), fillers=4, abstention=True),
    ItemSpec("abs-cat", "single-session-user", "What breed is my cat?",
             "The information provided is not enough. You mentioned your dog's breed but not having a cat.",
             D(2023, 9, 9, 10, 0), (
        (D(2023, 8, 30, 8, 45), (
            u("My corgi keeps barking at the mail carrier. How can I stop this?", True),
            a("Teach a quiet cue and reward calm behaviour before the carrier arrives."),
        )),
    ), fillers=5, abstention=True),
    ItemSpec("abs-dentist", "temporal-reasoning",
             "How many days passed between my dentist appointment and my eye exam?",
             "The information provided is not enough. You mentioned the dentist appointment but not an eye exam.",
             D(2023, 3, 30, 15, 0), (
        (D(2023, 3, 8, 13, 20), (
            u("I had a dentist appointment this morning and need to floss more. Which floss is easiest?", True),
            a("Floss picks or a water flosser can be easier to use every day."),
        )),
    ), fillers=4, abstention=True),
    ItemSpec("abs-rent", "knowledge-update", "What is my current rent for the apartment in Oakland?",
             "The information provided is not enough. You mentioned the rent for your apartment in Berkeley but "
             "not an apartment in Oakland.", D(2023, 12, 1, 9, 30), (
        (D(2023, 2, 20, 19, 0), (
            u("My rent for the Berkeley apartment is $1,900 a month. How can I budget for it?", True),
            a("A common rule is to keep housing under about a third of your take-home pay."),
        )),
        (D(2023, 10, 15, 20, 30), (
            u("My landlord raised the rent on my Berkeley apartment to $2,050. Is that a normal increase?", True),
            a("That is about an 8% increase; check your local rent rules for caps."),
        )),
    ), fillers=3, abstention=True),
)


# --------------------------------------------------------------------------- building


def _hex_id(key: str) -> str:
    return hashlib.sha256(f"longmemeval-sample:{key}".encode()).hexdigest()[:8]


def _filler_id(kind: str, rng: random.Random, used: set[str]) -> str:
    while True:
        if kind == "ultrachat":
            sid = f"ultrachat_{rng.randrange(10000, 999999)}"
        elif rng.random() < 0.5:
            letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
            sid = f"sharegpt_{''.join(rng.choice(letters) for _ in range(7))}_{rng.randrange(0, 40)}"
        else:
            sid = f"{rng.getrandbits(32):08x}_{rng.randrange(1, 5)}"
        if sid not in used:
            used.add(sid)
            return sid


def build_item(spec: ItemSpec, rng: random.Random) -> dict[str, Any]:
    """One upstream-shaped item: evidence sessions plus dated fillers, all sorted by date."""
    hex_id = _hex_id(spec.key)
    qid = f"{hex_id}_abs" if spec.abstention else hex_id
    infix = f"{hex_id}_abs" if spec.abstention else hex_id
    evidence_ids = [
        f"answer_{infix}_{i + 1}" if len(spec.evidence) > 1 else f"answer_{infix}"
        for i in range(len(spec.evidence))
    ]
    sessions: list[tuple[datetime, str, list[Turn]]] = [
        (when, sid, [dict(t) for t in turns]) for sid, (when, turns) in zip(evidence_ids, spec.evidence)
    ]
    first = min(when for when, _ in spec.evidence)
    window_start = first - timedelta(days=20)
    window_minutes = int((spec.asked - timedelta(hours=2) - window_start).total_seconds() // 60)
    used: set[str] = set()
    for index in rng.sample(range(len(FILLERS)), spec.fillers):
        kind, turns = FILLERS[index]
        when = window_start + timedelta(minutes=rng.randrange(window_minutes))
        sessions.append((when, _filler_id(kind, rng, used), [dict(t) for t in turns]))
    sessions.sort(key=lambda s: (s[0], s[1]))
    answer_ids = [sid for _, sid, _ in sessions if sid in evidence_ids]
    return {
        "question_id": qid,
        "question_type": spec.question_type,
        "question": spec.question,
        "answer": spec.answer,
        "question_date": format_date(spec.asked),
        "haystack_dates": [format_date(when) for when, _, _ in sessions],
        "haystack_session_ids": [sid for _, sid, _ in sessions],
        "haystack_sessions": [turns for _, _, turns in sessions],
        "answer_session_ids": answer_ids,
    }


def build_items(seed: int = SEED) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [build_item(spec, rng) for spec in SPECS]


def render(items: Sequence[dict[str, Any]]) -> str:
    """The file's exact text: one item per line block, stable across Python versions."""
    return json.dumps(list(items), ensure_ascii=False, indent=1) + "\n"


def write_sample(path: Path, seed: int = SEED) -> int:
    """Returns the number of items."""
    items = build_items(seed)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(items), encoding="utf-8")
    except OSError as err:
        raise UserError(f"cannot write the sample dataset to {path}: {err.strerror}",
                        fix="choose a writable --out path") from err
    return len(items)
