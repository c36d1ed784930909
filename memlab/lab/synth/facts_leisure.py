"""Fact kinds about travel, languages and devices: airline, language being learnt, phone, subscription plan."""

from __future__ import annotations

from memlab.lab.synth.specs import FactSpec

_PREFERRED_AIRLINE_VALUES = (
    "KLM", "Lufthansa", "TAP Air Portugal", "Iberia", "Finnair", "Qantas", "Emirates", "Singapore Airlines",
    "Air Canada", "Aer Lingus", "Icelandair", "Air New Zealand", "Austrian Airlines",
)  # fmt: skip

PREFERRED_AIRLINE = FactSpec(
    predicate="preferred_airline",
    topic="travel",
    values=_PREFERRED_AIRLINE_VALUES,
    state=(
        (
            "I always fly {v} when I can, the legroom is better. Can you look for options next month?",
            "I'll look at {v} first and show alternatives only if the times are much better.",
        ),
        ("I have status with {v}, so please prefer them for any flight you suggest.", "Noted, {v} flights first."),
        (
            "My go-to airline is {v}. Does it matter which fare class I book for lounge access?",
            "With status, lounge access usually depends on your tier rather than the fare, but check partner rules.",
        ),
    ),
    change=(
        (
            "I'm done with {old} after that lost bag. From now on I'd rather fly {v}.",
            "Sorry about the bag. I'll prefer {v} from now on.",
        ),
        (
            "Switched my loyalty to {v} on {past}, the status match went through.",
            "Nice, a status match is a quick way to keep your perks.",
        ),
        ("Please stop suggesting {old} flights, I prefer {v} now.", "Understood, {v} it is."),
    ),
    ask=(
        "Which carrier does the user like to travel with?",
        "What airline should flight searches for the user prioritise?",
        "Which airline is the user's favourite?",
    ),
    before=(
        "Which airline did the user favour before switching loyalty?",
        "What carrier did the user prefer before {v}?",
    ),
    order=("List the user's preferred airlines over time, oldest first.",),
    history=("Which carriers has the user been loyal to over time?",),
    when=("On what date did the user start favouring {v}?",),
    about="the airline the user prefers",
)

_LEARNING_LANGUAGE_VALUES = (
    "Japanese", "Portuguese", "Korean", "Mandarin", "Arabic", "Swedish", "Czech", "Vietnamese", "Norwegian",
    "Hungarian", "Finnish", "Hebrew",
)  # fmt: skip

LEARNING_LANGUAGE = FactSpec(
    predicate="learning_language",
    topic="language",
    values=_LEARNING_LANGUAGE_VALUES,
    state=(
        (
            "I'm learning {v} and I keep forgetting vocabulary after a week. What's a better routine?",
            "Spaced repetition works best: short daily reviews, adding new words only once old ones stick.",
        ),
        (
            "I started {v} lessons on {past}. How long until I can hold a basic conversation?",
            "With steady practice, a few months is realistic for simple conversations in {v}.",
        ),
        (
            "Could you quiz me on some {v} phrases for ordering food?",
            "Sure. I'll give you the English and you answer in {v}. First: a table for two, please.",
        ),
        (
            "My tutor says my {v} pronunciation is getting better but my listening is weak. Any tips?",
            "Listen to slow podcasts daily and shadow them out loud, repeating right after the speaker.",
        ),
    ),
    change=(
        (
            "I've put {old} on hold and started {v} instead, it's more useful for work.",
            "Makes sense. Want a starter plan for {v}?",
        ),
        (
            "New language project since {past}: {v}. My {old} will have to wait.",
            "Exciting! Let's start {v} with sounds and greetings.",
        ),
        (
            "I'm now learning {v}, since we'll spend a lot of time where it's spoken.",
            "Great choice. I'll switch the practice sessions to {v}.",
        ),
    ),
    ask=(
        "Which language is the user studying?",
        "What foreign language is the user working on at the moment?",
        "Which language do the user's current lessons cover?",
    ),
    before=("Which language was the user learning before the switch?", "What language did the user set aside for {v}?"),
    order=("In what order has the user studied foreign languages?",),
    history=("Which foreign languages has the user been learning?",),
    when=("When did the user begin studying {v}?",),
    about="the language the user is learning",
)

_OWNED_PRODUCT_VALUES = (
    "Pixel 8", "iPhone 15", "Galaxy S24", "Fairphone 5", "OnePlus 12", "Xperia 10", "Moto G84", "Nothing Phone 2",
    "Pixel 7a", "iPhone 13 mini",
)  # fmt: skip

OWNED_PRODUCT = FactSpec(
    predicate="owned_product",
    topic="devices",
    values=_OWNED_PRODUCT_VALUES,
    state=(
        (
            "I use the {v} and the battery barely lasts until lunch. Anything I can change in the settings?",
            "On the {v}, turn on adaptive battery and check which apps drain it in the battery usage screen.",
        ),
        (
            "How do I move my photos off the {v} without paying for cloud storage?",
            "Plug the phone into a computer and copy the camera folder, or use a local backup app over wifi.",
        ),
        (
            "I bought the {v} on {past}. Is a screen protector still worth it?",
            "Modern glass is tougher, but a cheap protector is still good insurance against scratches.",
        ),
    ),
    change=(
        (
            "I finally replaced my {old} with the {v}. How do I move my chat history over?",
            "Most chat apps have a transfer option in settings. Do it before you reset the {old}.",
        ),
        ("Got a new phone on {past}: the {v}. The old {old} went to my nephew.", "Nice upgrade! Enjoy the {v}."),
        (
            "Which case would you recommend for the {v}? I just upgraded.",
            "For the {v}, a slim case with raised edges around the camera protects it without the bulk.",
        ),
    ),
    ask=(
        "What phone does the user use?",
        "Which handset does the user currently own?",
        "What model of smartphone is the user carrying around?",
    ),
    before=(
        "Which handset did the user carry prior to getting a new one?",
        "What device did the user own prior to the {v}?",
    ),
    order=("List the phones the user has owned, oldest first.",),
    history=("Which smartphones has the user mentioned owning?",),
    when=("When did the user get the {v}?",),
    about="the phone the user owns",
)

SUBSCRIPTION_PLAN = FactSpec(
    predicate="subscription_plan",
    topic="devices",
    values=("monthly plan", "annual plan", "family plan", "student plan", "premium tier", "basic tier", "duo plan"),
    state=(
        (
            "I'm on the {v} for my {x} subscription. Is it worth keeping?",
            "If you use it every week, the {v} is probably fine. Check the yearly total against what you use.",
        ),
        (
            "How do I see when my {x} subscription renews? I'm on the {v}.",
            "Look under account settings, then billing. The renewal date is usually listed there.",
        ),
        (
            "Our household shares one {x} account on the {v}. Can two people use it at once?",
            "Most services allow that, but check the device limit in your account settings.",
        ),
    ),
    change=(
        (
            "I switched my {x} subscription from the {old} to the {v}.",
            "Good choice if it saves you money. The {v} starts at the next billing date.",
        ),
        (
            "Downgraded the {x} account to the {v} on {past} to save a bit.",
            "Sensible. You can always upgrade again later.",
        ),
        (
            "I'm on the {v} for {x} now, the {old} was too expensive.",
            "That makes sense. Let me know if you want to compare prices again later.",
        ),
    ),
    ask=(
        "What level of {x} service does the user pay for?",
        "What tier does the user pay for with the {x} service?",
        "Which {x} option is the user signed up to?",
    ),
    before=(
        "What tier did the user pay for previously?",
        "Before the latest change, which level of service did the user have?",
    ),
    order=("List the {x} plans the user has had, in order.",),
    history=("Which {x} plans has the user been on?",),
    when=("Since what date has the user been paying for the {v}?",),
    about="which tier the user pays for with {x}",
    extras=("music streaming", "cloud storage", "video streaming", "language app", "meal kit"),
)

LEISURE_FACTS = (
    PREFERRED_AIRLINE,
    LEARNING_LANGUAGE,
    OWNED_PRODUCT,
    SUBSCRIPTION_PLAN,
)
