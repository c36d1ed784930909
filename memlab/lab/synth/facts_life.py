"""Fact kinds about home, food, pets and family: values, statements, changes and questions.

Values of one fact kind never appear in any distractor text or in another kind's templates (the tests check
this), so the events that state a value are exactly the ones the generator labels.
"""

from __future__ import annotations

from memlab.lab.synth.specs import FactSpec

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip

_HOME_CITY_VALUES = (
    "Lyon", "Leeds", "Porto", "Valencia", "Austin", "Denver", "Melbourne", "Osaka", "Toronto", "Bristol", "Munich",
    "Gothenburg", "Ghent", "Bologna", "Edinburgh", "Seattle", "Montreal", "Wellington", "Utrecht", "Krakow", "Pune",
    "Bordeaux", "Leipzig", "Adelaide", "Nantes", "Tampere", "Brno", "Malmo",
)  # fmt: skip

HOME_CITY = FactSpec(
    predicate="home_city",
    topic="home",
    values=_HOME_CITY_VALUES,
    state=(
        (
            "We finally moved to {v} last month and I still don't know where anything is. Where do people usually "
            "buy second-hand furniture?",
            "Congratulations on settling in {v}! Local buy-and-sell groups and charity warehouses are the usual "
            "places for second-hand furniture.",
        ),
        (
            "I live in {v}, so anything you suggest has to be reachable by tram or bike.",
            "Understood, I'll stick to places that are easy to reach without a car.",
        ),
        (
            "Can you recommend a weekend routine for someone who works from home? For context I'm based in {v}.",
            "Since you're in {v}, a Saturday market walk and a short trip out of town would break up the week nicely.",
        ),
        (
            "Our flat in {v} gets really cold in winter. Is a dehumidifier worth buying?",
            "A dehumidifier helps a lot with damp cold. Look for one with a laundry mode, it dries clothes too.",
        ),
        (
            "We've been in {v} since {past} and the parking permit still hasn't arrived. Who do I chase?",
            "Permits usually come from the parking office rather than the main council line. Ask them for your "
            "application number.",
        ),
        (
            "Home for me is {v}. What are good day hikes within an hour of the city?",
            "There are usually good trails along the nearest river valley. Check the regional transit site for "
            "early trains at weekends.",
        ),
    ),
    change=(
        (
            "Big news: we left {old} and moved to {v}. The boxes are everywhere.",
            "Exciting! Going from {old} to {v} is a big step. Do you want a checklist for the address changes?",
        ),
        (
            "We're moving to {v} on {future}, the new job is there. What should I sort out before leaving {old}?",
            "Before you leave, give notice on utilities and internet, redirect your post and register with a doctor "
            "once you arrive in {v}.",
        ),
        (
            "Quick update, I don't live in {old} anymore, we relocated to {v} on {past}.",
            "Thanks for the update. I'll suggest things near {v} from now on.",
        ),
        (
            "Now that we're settled in {v} I need a new dentist. Any tips on choosing one?",
            "Check whether they take new patients and what a first check-up costs. Neighbours are usually the "
            "best source of recommendations.",
        ),
    ),
    ask=(
        "Which city does the user live in?",
        "Where is the user's home at the moment?",
        "In what city is the user currently living?",
        "What town or city does the user call home right now?",
    ),
    before=(
        "Where did the user live before their most recent move?",
        "Which city was the user's home prior to relocating to {v}?",
    ),
    order=(
        "List the cities the user has lived in, earliest first.",
        "In chronological order, where has the user made their home?",
    ),
    history=(
        "Which cities has the user lived in over the course of these conversations?",
        "Name all the places the user has called home.",
    ),
    when=("On what date did the user relocate to {v}?", "When did the user's move to {v} happen?"),
    about="where the user lives now",
)

DIET = FactSpec(
    predicate="diet",
    topic="food",
    values=("vegetarian", "vegan", "pescatarian", "keto", "flexitarian", "low-carb", "paleo"),
    state=(
        (
            "I'm {v}, so could you suggest a few quick weeknight dinners?",
            "Sure, here are three {v} options that take under thirty minutes: a stir-fry, a traybake and a soup.",
        ),
        (
            "Planning meals for next week. Keep in mind I eat {v}.",
            "Got it. I'll build the plan around what you eat and keep prep time short.",
        ),
        (
            "I've been eating {v} for about a year and I want more variety at lunch. Ideas?",
            "Grain bowls, stuffed flatbreads and big salads with a good dressing are easy to rotate at lunch.",
        ),
        (
            "I'm hosting a dinner on Saturday. I'm {v} but the guests aren't, what's a main that works for everyone?",
            "A shared spread everyone can adjust at the table works well, for example build-your-own tacos.",
        ),
        (
            "Since {past} I've been strictly {v}. Is it normal to feel tired in the first weeks?",
            "Some tiredness early on is common while your body adjusts. Make sure you eat enough overall, and see "
            "a doctor if it lasts.",
        ),
    ),
    change=(
        (
            "Update on the food front: I'm not {old} anymore, I switched to {v}.",
            "Thanks for telling me. I'll suggest {v} recipes from now on.",
        ),
        (
            "I went {v} on {past} after a month of reading about it. Can you redo my shopping list?",
            "Of course. Here's a shopping list that fits a {v} way of eating.",
        ),
        (
            "My doctor suggested a change, so I've dropped {old} eating and gone {v}.",
            "That's a big change. Do you want me to adapt your usual recipes?",
        ),
        ("From now on please treat me as {v} when you suggest recipes.", "Noted, {v} recipes only from here on."),
    ),
    ask=(
        "What kind of diet does the user follow?",
        "How does the user eat, diet-wise, at this point?",
        "Which eating style should recipe suggestions for the user respect?",
        "What's the user's current dietary pattern?",
    ),
    before=(
        "What diet did the user follow before the latest switch?",
        "Which eating style did the user give up for {v}?",
    ),
    order=(
        "Trace the user's diets from the earliest to the most recent.",
        "List the eating styles the user has followed, oldest first.",
    ),
    history=(
        "What different diets has the user followed?",
        "Name every eating style the user has mentioned following.",
    ),
    when=("When did the user start eating {v}?", "From what date has the user been {v}?"),
    about="the user's diet",
)

ALLERGY = FactSpec(
    predicate="allergy",
    topic="food",
    values=("peanuts", "shellfish", "sesame", "penicillin", "latex", "mustard", "wasp stings", "lupin"),
    state=(
        ("Heads up for any recipes: I'm allergic to {v}.", "Thanks, I'll leave {v} out of anything I suggest."),
        (
            "I had a bad reaction to {v} as a kid and I still carry an antihistamine. What should I tell a restaurant "
            "when I book?",
            "Mention the allergy when you book and again when you order, and ask how they prevent cross-contact.",
        ),
        (
            "Can you check this takeaway menu for me? I react badly to {v}.",
            "I'll flag every dish that lists {v} or might contain traces of it.",
        ),
        (
            "My GP confirmed the allergy test result: it's {v}. Anything I should change at home?",
            "Read labels carefully and keep your emergency medication where everyone at home can find it.",
        ),
    ),
    ask=(
        "What is the user allergic to?",
        "Which allergen must be avoided for the user?",
        "What substance gives the user an allergic reaction?",
    ),
    about="the user's allergy",
)

_PET_VALUES = (
    "Luna", "Milo", "Nala", "Otis", "Ziggy", "Pippa", "Rocco", "Tilly", "Bruno", "Frankie", "Loki", "Mabel", "Archie",
    "Dexter", "Winnie", "Marlowe", "Bodhi", "Cleo", "Rufus", "Biscotti", "Pumba", "Juno",
)  # fmt: skip

PET = FactSpec(
    predicate="pet",
    topic="pets",
    values=_PET_VALUES,
    state=(
        (
            "We adopted a {x} from the shelter last weekend. {v} is settling in well, what should I buy first?",
            "How exciting, welcome home {v}! Start with a bed, food and water bowls, and book a vet check in the "
            "first week.",
        ),
        (
            "My {x} {v} has been off food for two days. Should I be worried?",
            "Two days is long enough to call the vet, especially if {v} is also less active than usual.",
        ),
        (
            "Is it ok to leave a {x} alone for a full work day? {v} seems fine but I feel guilty.",
            "Many adult animals cope, but a midday visit or a sitter makes a long day easier for {v}.",
        ),
        (
            "We're picking up our new {x} on {future} and we are going to call it {v}. What should we prepare?",
            "Congratulations! Before {v} arrives, set up a quiet corner, get food and bowls, and find a vet nearby.",
        ),
        (
            "Vet bills are getting expensive. Is insurance worth it for a young {x} like {v}?",
            "For a young animal it's often worth it, since accidents are the most common big cost.",
        ),
    ),
    ask=(
        "Which name does the {x} belonging to the user answer to?",
        "What name did the user give their {x}?",
        "By what name does the user's {x} go?",
    ),
    when=("When did {v} join the user's household?",),
    about="what the user's {x} is called",
    extras=("dog", "cat", "rabbit", "parrot", "tortoise", "guinea pig"),
)

_PARTNER_VALUES = (
    "Sam", "Priya", "Tomas", "Jonas", "Ines", "Ravi", "Chloe", "Noor", "Felix", "Hannah", "Yusuf", "Elena", "Kenji",
    "Mateo", "Aisha", "Bram", "Greta", "Omar",
)  # fmt: skip

PARTNER = FactSpec(
    predicate="partner_name",
    topic="family",
    values=_PARTNER_VALUES,
    state=(
        (
            "My {x} {v} and I are planning a quiet weekend away. Something within three hours by train?",
            "A small coastal town or a lakeside village works well for a quiet weekend. Do you and {v} prefer "
            "walking or relaxing?",
        ),
        (
            "{v}, my {x}, keeps telling me to ask you about standing desks. Are they worth it?",
            "They help if you alternate between sitting and standing, not if you stand all day.",
        ),
        (
            "It's my {x}'s birthday soon. {v} loves cooking, any gift ideas?",
            "For someone who loves cooking: a good chef's knife, a cookbook from a favourite cuisine, or a class "
            "for the two of you.",
        ),
        (
            "I need help writing a message. My {x} {v} and I have been together ten years this month and I'm bad "
            "at words.",
            "Happy anniversary! Start with a specific memory you share with {v}, then say what you're looking "
            "forward to.",
        ),
    ),
    ask=("What is the name of the user's {x}?", "Who is the user's {x}?", "What name does the user's {x} go by?"),
    about="what the user's {x} is called",
    extras=("partner", "wife", "husband", "girlfriend", "boyfriend"),
)

CHILD = FactSpec(
    predicate="child_name",
    topic="family",
    values=("Robin", "Sasha", "Jamie", "Charlie", "Riley", "Kai", "Rowan", "Eden", "Remy", "Quinn", "Jules", "Ari"),
    state=(
        (
            "My {x} {v} starts school in September. What should we practise over the summer?",
            "Reading together every day and practising getting dressed alone help most. Make it fun for {v}.",
        ),
        (
            "{v}, my {x}, wants to learn an instrument. Piano or guitar for a seven-year-old?",
            "Piano is often easier to start at seven because the notes are laid out clearly.",
        ),
        (
            "Need a party idea for my {x}. {v} is turning nine and loves dinosaurs.",
            "A dinosaur dig in the garden with plaster fossils to uncover would be a hit with nine-year-olds.",
        ),
        (
            "My {x} {v} has a cough that won't go away. When should we see a doctor?",
            "If it lasts more than three weeks, or there's fever or trouble breathing, book an appointment.",
        ),
    ),
    ask=("What is the name of the user's {x}?", "What is the user's {x} called?", "Who is the user's {x}?"),
    about="what the user's {x} is called",
    extras=("daughter", "son"),
)

BIRTHDAY = FactSpec(
    predicate="birthday",
    topic="family",
    values=tuple(f"{day} {month}" for month in MONTHS for day in range(1, 29)),
    state=(
        (
            "My birthday is on {v} and I'd like to plan a dinner with six friends. Any ideas for a format?",
            "A long table with one shared main and a simple dessert keeps it relaxed. Book early, {v} might fall "
            "on a busy weekend.",
        ),
        (
            "Can you remind me to book a table somewhere nice? I turn forty on {v}.",
            "I'll remember that your birthday is on {v}.",
        ),
        (
            "I was born on {v}, which always clashes with exam season. How do I celebrate without losing study time?",
            "Plan something short, like a breakfast out, and save the bigger celebration for after the exams.",
        ),
    ),
    ask=(
        "When is the user's birthday?",
        "On which day of the year did the user come into the world?",
        "What date does the user celebrate getting a year older?",
    ),
    about="the day the user was born",
    no_answer=False,  # any date could answer it, and dates also appear in other talk
)

LIFE_FACTS = (
    HOME_CITY,
    DIET,
    ALLERGY,
    PET,
    PARTNER,
    CHILD,
    BIRTHDAY,
)
