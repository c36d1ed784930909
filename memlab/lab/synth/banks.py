"""Slot fillers for distractor talk, multi-session episodes, small talk, openers and closers.

No filler here may contain a fact value (the facts_* modules): the tests check it, which is what lets the
generator say that only fact statements mention a fact's value.
"""

from __future__ import annotations

from memlab.lab.synth.specs import EpisodeSpec

BANKS: dict[str, tuple[str, ...]] = {
    "dest": (
        "Lisbon", "Rome", "Kyoto", "Reykjavik", "Marrakech", "Prague", "Vienna", "Seville", "Dubrovnik",
        "Istanbul", "Hanoi", "Cape Town", "Buenos Aires", "Mexico City", "Copenhagen", "Tallinn", "Budapest",
        "Athens", "Naples", "Bergen", "Crete", "Madeira", "Tbilisi", "Oaxaca", "Seoul", "Singapore",
        "Vancouver", "Quebec City", "Santorini", "Ljubljana", "Sarajevo", "Cusco", "Hoi An", "Bali",
        "Florence", "Granada", "Riga", "Zanzibar", "Tasmania", "Sicily",
    ),
    "month": (
        "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
        "November", "December",
    ),
    "dish": (
        "mushroom risotto", "chicken curry", "shakshuka", "lentil dal", "banana bread", "tomato soup", "lasagne",
        "chili", "ramen", "fish tacos", "minestrone", "fried rice", "carrot cake", "beef stew", "paella",
        "gnocchi", "moussaka", "pho", "enchiladas", "apple crumble",
    ),
    "ingredient": (
        "buttermilk", "fresh basil", "chickpeas", "feta", "spinach", "lemons", "smoked paprika", "oat milk",
        "puff pastry", "coconut milk", "ginger", "avocados", "fresh coriander", "sourdough bread", "leeks",
    ),
    "task": (
        "the quarterly report", "a performance review", "the onboarding plan", "the roadmap slides",
        "a vendor comparison", "the hiring plan", "a project proposal", "the incident review", "the team offsite",
    ),
    "animal": ("dog", "cat", "rabbit", "hamster", "parrot", "puppy", "kitten", "ferret", "budgie"),
    "relative": (
        "my sister", "my brother", "my mum", "my dad", "my cousin", "my aunt", "my grandmother", "my nephew",
        "my best friend", "my neighbour",
    ),
    "appliance": (
        "dishwasher", "washing machine", "kettle", "fridge", "oven", "tumble dryer", "boiler", "coffee machine",
        "extractor fan",
    ),
    "room": ("bathroom", "hallway", "spare room", "living room", "bedroom", "utility room", "attic"),
    "exercise": (
        "squats", "interval runs", "yoga", "rowing", "kettlebell swings", "hill sprints", "swimming", "spin class",
        "pilates", "bouldering",
    ),
    "amount": (
        "45 euros", "120 pounds", "80 dollars", "300 euros", "60 pounds", "250 dollars", "95 euros", "150 pounds",
    ),
    "app": ("banking app", "budgeting app", "notes app", "calendar app", "photo backup app", "to-do app"),
    "gadget": (
        "router", "printer", "smart TV", "smartwatch", "tablet", "bluetooth speaker", "webcam", "games console",
        "smart plug", "laptop",
    ),
    "svc": (
        "image resizer", "admin dashboard", "internal wiki", "cron workers", "staging cluster", "API gateway",
        "message queue", "feature-flag service",
    ),
    "opstool": ("Terraform", "Helm", "Prometheus", "Grafana", "Ansible", "Docker Compose", "Kustomize", "Packer"),
    "grammar": (
        "the subjunctive", "reflexive verbs", "the past tense", "counters", "honorifics", "gendered nouns",
        "relative clauses", "word order in questions", "the conditional", "particles",
    ),
    "gift": (
        "a pottery class", "noise-cancelling headphones", "a cast-iron pan", "a vintage record player",
        "concert tickets", "a hot-air balloon ride", "a framed map", "a cookery course", "a telescope",
        "a leather weekend bag", "a sourdough starter kit", "a wine tasting evening", "a hammock",
        "a star map print", "an espresso machine", "a houseplant subscription",
    ),
}  # fmt: skip

TRIP = EpisodeSpec(
    kind="trip_shortlist",
    topic="travel",
    bank="dest",
    first=(
        (
            "We're starting to plan {x}. {v} is the first idea that came up, is it expensive?",
            "{v} can be reasonable if you book early and stay a little outside the centre.",
        ),
        (
            "For {x} I'm looking at {v}. How many days would you need there?",
            "Three to four days gives you a good feel for {v} without rushing.",
        ),
        (
            "Thinking about {v} for {x}. Is it easy to get around without a car?",
            "Public transport in {v} is decent, and the centre is walkable.",
        ),
    ),
    more=(
        (
            "Another option for {x}: {v}. How does it compare on cost?",
            "{v} tends to be a bit cheaper for food and hotels.",
        ),
        (
            "A friend suggested {v} for {x} instead. Good idea?",
            "It's a good choice, especially if you like food and long walks.",
        ),
        (
            "What about {v} for {x}? A colleague loved it.",
            "{v} is popular for good reasons: good food, walkable streets and plenty of day trips.",
        ),
    ),
    ask=(
        "Which destinations did the user mention as possible options when planning {y}?",
        "List every place the user floated as a candidate while organising {y}.",
        "Where was the user weighing up going on {y}? Give all the options.",
    ),
    extras=(
        ("the summer trip", "the user's summer holiday"),
        ("our honeymoon", "the user's honeymoon"),
        ("an autumn break", "the user's autumn getaway"),
        ("our anniversary weekend", "the user's anniversary trip"),
        ("the family holiday at Easter", "the user's Easter vacation with the kids"),
        ("my sister's hen weekend", "the hen party of the user's sister"),
    ),
)

GIFTS = EpisodeSpec(
    kind="gift_ideas",
    topic="family",
    bank="gift",
    first=(
        (
            "I need a present for {x}. I'm thinking {v}, too boring?",
            "Honestly, {v} isn't boring if it fits what they enjoy. Add a handwritten note to make it personal.",
        ),
        (
            "Gift brainstorm for {x}: maybe {v}? Money isn't the main issue.",
            "That could work well. Check delivery times so it arrives in time.",
        ),
    ),
    more=(
        (
            "Still stuck on {x}. Another idea: {v}.",
            "I think {v} is a thoughtful option, especially if it's something they wouldn't buy themselves.",
        ),
        ("What do you think of {v} for {x}?", "Nice idea. It feels personal without being over the top."),
        (
            "My cousin suggested {v} as a present for {x}. Thoughts?",
            "It's a good suggestion, especially as a shared experience.",
        ),
    ),
    ask=(
        "Which present ideas did the user come up with for {y}?",
        "What gifts has the user been weighing up for {y}?",
    ),
    extras=(
        ("my sister's fortieth", "the fortieth birthday of the user's sister"),
        ("my dad's retirement", "the retirement of the user's father"),
        ("our anniversary", "the user's anniversary"),
        ("my best friend's wedding", "the wedding of the user's best friend"),
        ("my mum's seventieth", "the seventieth birthday of the user's mother"),
        ("my boss's farewell", "the farewell of the user's boss"),
    ),
)

EPISODES = (TRIP, GIFTS)

OPENERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Sorry for disappearing, it's been a hectic week.",
     ("No worries at all. What can I help with today?", "No problem, welcome back. Where shall we pick up?")),
    ("Morning! Coffee in hand, let's get through a few questions.",
     ("Good morning! Fire away whenever you're ready.", "Morning! Happy to help, what's first?")),
    ("Thanks, the tips from last time were really helpful.",
     ("Glad to hear it! Anything new you want to look at?", "That's great to hear. What's on your mind today?")),
    ("Hi, I've got a few things to run past you today.",
     ("Hi! Go ahead, one at a time.", "Sure, let's go through them.")),
)  # fmt: skip

ASIDES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Let me think about that and come back to it later.",
     ("Of course, take your time. I'll be here when you're ready.", "Sure, no rush at all.")),
    ("Okay, one more thing before I forget.", ("Sure, go ahead, I'm listening.", "Of course, what is it?")),
    ("Honestly this saves me so much time, thank you.",
     ("You're welcome! That's what I'm here for.", "Happy to help, any time.")),
    ("Sorry, got distracted by a phone call. Where were we?",
     ("No problem. We were in the middle of your last question.", "All good, pick up wherever suits you.")),
)  # fmt: skip

SWITCHES = (
    "Different topic: ",
    "Switching gears. ",
    "Something else while I remember. ",
    "On another note: ",
    "Before I forget: ",
)

PREFIXES = ("Quick question: ", "Another one: ", "Okay, next thing. ", "Random question: ", "Right. ", "Next: ")
FIRST_PREFIXES = ("Hi again! ", "Hello! ", "Back again. ", "Quick question: ", "Hey! ")

CLOSERS = (
    "Great, that's all for today, thanks!",
    "Perfect, I'll try that tonight.",
    "Thanks, that gives me a plan.",
    "Cool, I'll report back once I've tried it.",
    "Brilliant, that's exactly what I needed.",
    "Okay, I'll think it over. Thanks a lot.",
)
