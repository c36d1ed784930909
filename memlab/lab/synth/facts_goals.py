"""Fact kinds about goals and money: a training target, a project budget, a savings goal."""

from __future__ import annotations

from memlab.lab.synth.specs import FactSpec

_FITNESS_GOAL_VALUES = (
    "a half marathon", "a sub-25 minute 5K", "a first triathlon", "a 100 km cycling sportive",
    "a 2 km open-water swim", "ten pull-ups in a row", "a 140 kg deadlift", "a spring marathon", "a 50 km trail race",
)  # fmt: skip

FITNESS_GOAL = FactSpec(
    predicate="fitness_goal",
    topic="health",
    values=_FITNESS_GOAL_VALUES,
    state=(
        (
            "I'm training for {v} and I can do four sessions a week. How should I split them?",
            "For {v} with four sessions: two focused workouts, one long easy session and one strength day.",
        ),
        (
            "My main goal this year is {v}. I keep losing motivation in week three, any tricks?",
            "Sign up for the event or set a test date, and track small wins each week.",
        ),
        (
            "Goal check: {v}, and the event is on {future}. Is that enough time if I start now?",
            "It depends on your base, but with steady training most people get there. Build gradually and keep an "
            "easy week every month.",
        ),
        (
            "What should I eat before a long session? I'm working towards {v}.",
            "A carb-rich meal two to three hours before, and something small like a banana closer to the start.",
        ),
    ),
    change=(
        (
            "Change of plan on training: I've dropped {old} and I'm now going for {v}.",
            "Good call if it fits your life better. I'll rework the plan for {v}.",
        ),
        (
            "My knee needs a break from {old}, so the new target is {v}. Can you adjust my weeks?",
            "Of course. We'll shift the plan towards {v} and keep the load on your knee low.",
        ),
        (
            "New season, new target: {v}, and the event is on {future}.",
            "That's a clear target. Let's plan backwards from the event date.",
        ),
    ),
    ask=(
        "What is the user training for right now?",
        "Which athletic target is the user working towards?",
        "What's the user's current fitness objective?",
    ),
    before=(
        "What was the user training for before changing targets?",
        "Which fitness goal did the user abandon in favour of {v}?",
    ),
    order=(
        "List the user's training targets in the order they set them.",
        "Give the user's fitness goals from first to latest.",
    ),
    history=("Which fitness goals has the user had?", "Name every training target the user has mentioned."),
    when=("By what date does the user need to be ready for {v}?",),
    about="the user's fitness goal",
)

_AMOUNTS = tuple(
    tuple(f"{amount} {currency}" for amount in ("6,500", "8,000", "9,500", "12,000", "15,000", "18,500", "22,000"))
    for currency in ("euros", "pounds", "dollars")
)  # one user's budgets share a currency

BUDGET = FactSpec(
    predicate="budget",
    topic="money",
    values=tuple(v for group in _AMOUNTS for v in group),
    groups=_AMOUNTS,
    state=(
        (
            "We're finally doing the {x}. Our budget is {v}, is that realistic?",
            "{v} can work if you prioritise. Get three quotes and keep ten percent aside for surprises.",
        ),
        (
            "For the {x} I don't want to go over {v} in total. Where do people usually overspend?",
            "Labour and last-minute upgrades are where budgets slip most. Agree on a fixed price where you can.",
        ),
        (
            "Can you help me plan the {x}? I can't spend more than {v}.",
            "Sure. I'll split {v} into the main cost categories so you can see where it goes.",
        ),
        (
            "We set aside {v} for the {x} and I'd like to track spending in a spreadsheet. What columns do I need?",
            "Date, supplier, category, quoted amount, paid amount and a notes column are enough to start.",
        ),
    ),
    change=(
        (
            "We had to revise the {x} budget: it's now {v} instead of {old}.",
            "Noted, {v} is the new ceiling for the {x}. Shall I redo the breakdown?",
        ),
        (
            "After the last round of quotes we reworked the numbers: the {x} budget is {v} now.",
            "Thanks. With {v} as the limit, let's go through the plan again.",
        ),
        (
            "We agreed a new figure for the {x} on {past}: {v} in total.",
            "Good to have a firm number. Let's see which parts of the plan change.",
        ),
    ),
    ask=(
        "How much money is the user prepared to spend on the {x}?",
        "What's the maximum the user wants to pay for the {x}?",
        "What is the upper limit on costs for the user's {x}?",
    ),
    before=(
        "What was the {x} budget before the user revised it?",
        "How much did the user plan to spend on the {x} before settling on {v}?",
    ),
    order=("How has the user's {x} budget changed over time? Give the amounts in order.",),
    history=("What amounts has the user named over time as the spending cap on the {x}?",),
    when=("On what date was the money available for the {x} revised?",),
    about="how much the user can spend on the {x}",
    extras=("kitchen renovation", "bathroom refit", "loft conversion", "new roof", "garden redesign", "home office"),
)

_SAVINGS_GOAL_VALUES = (
    "a house deposit", "a sabbatical year", "an electric car", "a round-the-world trip", "early retirement",
    "a sailing boat", "a university fund for the kids", "a year of living abroad",
)  # fmt: skip

SAVINGS_GOAL = FactSpec(
    predicate="savings_goal",
    topic="money",
    values=_SAVINGS_GOAL_VALUES,
    state=(
        (
            "I'm saving up for {v}. How much of my salary should go into savings each month?",
            "A common starting point is 20 percent of take-home pay. Automate it on payday.",
        ),
        (
            "What's the best kind of account for a long-term goal? Mine is {v}.",
            "For {v}, a high-interest savings account or a low-cost index fund, depending on when you need it.",
        ),
        (
            "Every spare euro goes towards {v} at the moment. Is it silly to skip holidays for it?",
            "Not silly, but a cheap break now and then keeps you from burning out on saving.",
        ),
    ),
    change=(
        (
            "Our priorities changed: forget {old}, we're now saving for {v}.",
            "Understood, {v} is the new target. Let's work out a monthly amount.",
        ),
        ("New savings target as of {past}: {v}. Can you redo the plan?", "Sure. Here's a new plan aimed at {v}."),
        (
            "I've moved the savings pot over to {v} instead.",
            "Makes sense. Shall I check how long it will take at your current rate?",
        ),
    ),
    ask=(
        "What is the user putting money aside for?",
        "What is the user stashing money away for?",
        "What big thing is the user building up money for?",
    ),
    before=(
        "What was the user saving for before the goal changed?",
        "Which savings target did the user replace with {v}?",
    ),
    order=("List the user's savings targets from first to latest.",),
    history=("What savings goals has the user mentioned over time?",),
    when=("From what date has the user been putting money towards {v}?",),
    about="the user's savings target",
)

GOAL_FACTS = (
    FITNESS_GOAL,
    BUDGET,
    SAVINGS_GOAL,
)
