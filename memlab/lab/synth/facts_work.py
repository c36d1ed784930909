"""Fact kinds about work and deployments: employer, job title, programming language, deploy tool, region."""

from __future__ import annotations

from memlab.lab.synth.specs import FactSpec

_EMPLOYER_VALUES = (
    "Northwind Logistics", "Brightwater Health", "Halcyon Games", "Tidewell Energy", "Orbitron Analytics",
    "Fernhill Bank", "Bluepeak Software", "Cobalt Robotics", "Larkspur Media", "Quarry Labs", "Meridian Insurance",
    "Saltmarsh Studios", "Vantage Freight", "Greenleaf Grocers", "Ironbridge Consulting", "Polaris Biotech",
    "Redwood Retail", "Atlas Mobility", "Kestrel Aerospace", "Copperline Telecom",
)  # fmt: skip

EMPLOYER = FactSpec(
    predicate="employer",
    topic="work",
    values=_EMPLOYER_VALUES,
    state=(
        (
            "I work at {v} and we have performance reviews next week. How do I write a self-assessment that isn't "
            "boring?",
            "Lead with two or three concrete results, with numbers where you can, then one thing you want to grow in.",
        ),
        (
            "My employer, {v}, just announced a four-day week trial. How do I make the most of it?",
            "Protect the day off and plan the four days tightly. Sounds like {v} is serious about it.",
        ),
        (
            "I've been at {v} for three years and I'm wondering whether to ask for a raise. How do I prepare?",
            "Collect what you've delivered in the past year and compare your pay with market data for your role.",
        ),
        (
            "I'm writing my bio for the company website at {v}. Can you make it sound less stiff?",
            "Sure. Paste the current bio and I'll make it friendlier while keeping it professional.",
        ),
    ),
    change=(
        (
            "I accepted the offer! I'm leaving {old} and starting at {v} on {future}.",
            "Congratulations on the move to {v}! Want help planning your first weeks?",
        ),
        (
            "First week at {v} done. Very different from {old}, much less process.",
            "Glad the first week went well. Less process can be freeing, but ask early how decisions get made.",
        ),
        ("I changed jobs on {past}, I'm at {v} now.", "Congratulations on the new job! How are you finding it?"),
        (
            "Handed in my notice at {old} today. {v} made me an offer I couldn't refuse.",
            "Congratulations! Leave on good terms, and ask {v} for a written start date.",
        ),
    ),
    ask=(
        "Which company does the user work for?",
        "Who employs the user at the moment?",
        "What organisation pays the user's salary nowadays?",
    ),
    before=(
        "Which company did the user work for before the latest job change?",
        "Where was the user employed before joining {v}?",
    ),
    order=("List the companies the user has worked for, earliest first.",),
    history=("Which employers has the user mentioned working for?",),
    when=("When did the user start working at {v}?", "On what date did the user's job at {v} begin?"),
    about="the user's employer",
)

_TRACKS = (
    ("backend engineer", "site reliability engineer", "solutions architect", "data engineer", "platform lead"),
    ("data analyst", "research scientist", "machine learning lead", "data science lead"),
    ("nurse practitioner", "clinical pharmacist", "charge nurse", "clinical lead"),
    ("marketing lead", "content strategist", "sales director", "product manager", "project coordinator"),
    ("financial controller", "management accountant", "finance director", "payroll lead"),
)  # a promotion stays on one track

JOB_TITLE = FactSpec(
    predicate="job_title",
    topic="work",
    values=tuple(v for group in _TRACKS for v in group),
    groups=_TRACKS,
    state=(
        (
            "I'm a {v}, and my calendar is full of meetings. How do I protect focus time?",
            "Block two mornings a week as focus time and decline meetings without an agenda.",
        ),
        (
            "Can you help me update my CV? My current title is {v}.",
            "Sure. For a {v} role, lead with outcomes rather than duties.",
        ),
        (
            "As a {v} I'm supposed to mentor a junior colleague. Where do I start?",
            "Agree on goals together, meet every two weeks and let them set the agenda.",
        ),
    ),
    change=(
        (
            "I got promoted! Officially {v} now, no longer {old}.",
            "Congratulations on becoming {v}! Do you want help planning the first ninety days?",
        ),
        (
            "New role from {future}: {v}. I'm nervous about it.",
            "That's a normal feeling. Start with one-on-ones with everyone in the first two weeks.",
        ),
        (
            "My title changed on {past}, HR now lists me as {v}.",
            "Congratulations. Make sure your profile and email signature are updated too.",
        ),
    ),
    ask=(
        "What is the user's job title?",
        "What role does the user hold at work?",
        "What position does the user occupy?",
    ),
    before=(
        "What was the user's role before their latest title change?",
        "Which position did the user have before becoming {v}?",
    ),
    order=("List the user's job titles in chronological order.",),
    history=("Which job titles has the user held?",),
    when=("When did the user become {v}?",),
    about="the user's job title",
)

_PROGRAMMING_LANGUAGE_VALUES = (
    "Python", "TypeScript", "Kotlin", "Rust", "Scala", "Elixir", "Ruby", "Swift", "Haskell", "Clojure", "OCaml",
    "Erlang", "Dart",
)  # fmt: skip

PROGRAMMING_LANGUAGE = FactSpec(
    predicate="programming_language",
    topic="work",
    values=_PROGRAMMING_LANGUAGE_VALUES,
    state=(
        (
            "Most of my work is in {v}. Which testing library would you pick for a new project?",
            "For {v}, start with the most widely used test runner in its ecosystem and add property-based tests later.",
        ),
        (
            "I write {v} all day at work. How do I get better at reading other people's code?",
            "Read code with a question in mind, like how a request flows, and write down what surprised you.",
        ),
        (
            "Our codebase is almost entirely {v}. Is it worth adding a second language for the data jobs?",
            "Only if a library you need is much better elsewhere. One language keeps hiring and tooling simpler.",
        ),
    ),
    ask=(
        "Which programming language does the user mostly code in?",
        "What language is the user's day-to-day development done in?",
    ),
    about="the programming language the user works in",
)

_DEPLOY_TOOL_VALUES = (
    "Argo CD", "GitHub Actions", "Jenkins", "Flux", "Spinnaker", "GitLab CI", "CircleCI", "Buildkite",
    "Octopus Deploy", "Tekton", "TeamCity",
)  # fmt: skip

DEPLOY_TOOL = FactSpec(
    predicate="deploy_tool",
    topic="devops",
    values=_DEPLOY_TOOL_VALUES,
    state=(
        (
            "We deploy everything with {v}. How do I add a manual approval step before production?",
            "{v} supports gated promotions: add an approval stage that waits for a reviewer before production.",
        ),
        (
            "Our pipelines run on {v} and the builds take twenty minutes. Where would you look first?",
            "Start with caching: dependencies and container layers are the usual culprits.",
        ),
        (
            "Releases go out through {v} at my team. Is it safe to deploy on Fridays?",
            "It's safe if rollbacks are one click and someone is around afterwards. Otherwise keep Fridays small.",
        ),
    ),
    change=(
        (
            "We finished migrating from {old} to {v} on {past}.",
            "Nice milestone! Archive the old {old} jobs so nobody triggers them by accident.",
        ),
        (
            "We're replacing {old} with {v}, starting with the smaller services.",
            "Good plan. Moving the small services first lets you learn {v} with low risk.",
        ),
        (
            "All deploys now go through {v}, the old system is switched off.",
            "Great, one deployment path is much easier to reason about.",
        ),
    ),
    ask=(
        "What deployment tooling does the user's team rely on?",
        "Which CI/CD system ships the user's code to production?",
        "What does the user use to roll out releases?",
    ),
    before=(
        "What did the user deploy with before the migration?",
        "Which tool did {v} replace for the user's deployments?",
    ),
    order=("List the deployment tools the user has used, earliest first.",),
    history=("Which deployment tools has the user mentioned?",),
    when=("When did the user's team complete the move to {v}?",),
    about="the tool the user deploys with",
)

_CLOUD_REGION_VALUES = (
    "eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-southeast-2", "eu-north-1", "ca-central-1",
    "ap-northeast-1", "sa-east-1",
)  # fmt: skip

CLOUD_REGION = FactSpec(
    predicate="cloud_region",
    topic="devops",
    values=_CLOUD_REGION_VALUES,
    state=(
        (
            "Our {x} service runs in {v}. Latency from Asia is bad, what are the options?",
            "For {x} in {v}, a CDN for static content and a read replica closer to Asia are the usual first steps.",
        ),
        (
            "For context, {x} lives in {v} on Kubernetes. The pods keep getting evicted at night.",
            "Night-time evictions often come from a batch job using all the memory. Check node pressure first.",
        ),
        (
            "The {x} service is deployed in {v}. How do I estimate what a second region would cost?",
            "Roughly double the compute, plus cross-region data transfer and the replicated database.",
        ),
    ),
    change=(
        (
            "We moved the {x} service from {old} to {v} on {past}, latency is much better.",
            "Great result. Keep the {old} setup around for a week in case you need to roll back.",
        ),
        (
            "The {x} service now runs in {v}, we left {old} for data residency reasons.",
            "Makes sense for residency. Remember to move backups and logs too.",
        ),
        (
            "Heads up: {x} is in {v} now, please use that in any commands you suggest.",
            "Noted, I'll use {v} for {x} from now on.",
        ),
    ),
    ask=(
        "In which cloud region does the {x} service run?",
        "Where is the user's {x} service hosted, region-wise?",
        "Which region hosts {x} today?",
    ),
    before=("Which region did the {x} service run in before the migration?", "Where was {x} hosted before {v}?"),
    order=("List the regions the {x} service has been hosted in, oldest first.",),
    history=("Which regions has the {x} service been deployed to?", "Name every data-centre region {x} has lived in."),
    when=("On what date did {x} start running out of {v}?",),
    about="where the {x} service is hosted",
    extras=("payments", "checkout", "search", "notifications", "billing", "reporting", "auth"),
    subject="service:{x}",
)

WORK_FACTS = (
    EMPLOYER,
    JOB_TITLE,
    PROGRAMMING_LANGUAGE,
    DEPLOY_TOOL,
    CLOUD_REGION,
)
