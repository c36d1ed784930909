"""memlab and make command lines in shell text (a script, a CI workflow's steps, the docs' shell blocks), checked
against what exists: a memlab line against the Typer app's click command tree (every command and option it names),
a make line against the Makefile's targets. Nothing is run."""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import typer

from memlab.cli import app

# words after which the next word is a command again (bash's control operators and reserved words)
COMMAND_STARTS = {";", ";;", "&&", "||", "|", "&", "(", "{", "!", "then", "do", "else", "elif", "if", "while", "until",
                  "time", "exec"}  # fmt: skip
_SUBSTITUTION = re.compile(r"\$\([^()]*\)")  # $( ... ) without nesting: its output is no command word of ours
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_TARGET = re.compile(r"^([A-Za-z][\w.-]*)\s*:(?!=)", re.MULTILINE)


@dataclass(frozen=True)
class Invocation:
    """One command line: its words from the program name on, up to the next control operator or redirection."""

    words: tuple[str, ...]
    where: str

    def __str__(self) -> str:
        return f"{self.where}: {shlex.join(self.words)}"


def _uncommented(line: str) -> str:
    """The line up to its comment: a `#` that starts a word outside quotes (`a#b` and `"#"` are no comments)."""
    quote, previous = None, " "
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (previous.isspace() or previous in ";&|()"):
            return line[:i]
        previous = char
    return line


def command_words(text: str) -> list[list[str]]:
    """The words of each logical line of shell text (continuation backslashes joined, comments dropped), operators
    (`&&`, `;`, `|`, `>`...) as words of their own."""
    lines = []
    for line in re.sub(r"\\\n", " ", text).splitlines():
        lexer = shlex.shlex(_uncommented(line), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        try:
            words = list(lexer)
        except ValueError as exc:  # an unclosed quote: the line's problem, reported rather than skipped
            raise ValueError(f"cannot split the shell line {line!r}: {exc}") from None
        if words:
            lines.append(words)
    return lines


def invocations(text: str, program: str, where: str) -> list[Invocation]:
    """Every command line of `text` whose command word is `program` (or a path ending in /program)."""
    found = []
    for words in command_words(_SUBSTITUTION.sub("", text)):
        start = True
        for i, word in enumerate(words):
            if start and _ASSIGNMENT.match(word):
                continue  # VAR=value before a command
            if start and (word == program or word.endswith(f"/{program}")):
                rest = []
                for w in words[i + 1 :]:
                    if w in COMMAND_STARTS or (w and set(w) <= set("();<>|&")):
                        break
                    rest.append(w)
                found.append(Invocation((program, *rest), where))
            start = word in COMMAND_STARTS
    return found


@functools.cache
def _command_tree():
    """The Typer app as its click command tree, built once."""
    return typer.main.get_command(app)


def memlab_problem(words: tuple[str, ...], *, mention: bool = False) -> str | None:
    """Why a memlab command line would not parse (an unknown command or option, an option without its value, an
    extra argument), or None. Only the syntax is parsed, with the command's own parser: values are not converted
    and callbacks not run, since a line may hold "$VARIABLES" and placeholders. Typer keeps its own copy of click,
    so a group is told by its `commands` and a parse error by any exception the parser raises.

    `mention`: the words name a command in prose (`memlab report --against`, `memlab queries sample [--n 200]`):
    optional parts in brackets count as given, and a last option may stand without its value."""
    command = _command_tree()
    path, args = ["memlab"], [w.strip("[]") if mention else w for w in words[1:]]
    while hasattr(command, "commands") and args and not args[0].startswith("-"):
        sub = command.commands.get(args[0])
        if sub is None:
            return f"`{' '.join(path)}` has no command {args[0]!r} (it has {', '.join(sorted(command.commands))})"
        path.append(args.pop(0))
        command = sub
    ctx = command.context_class(command, info_name=" ".join(path), **command.context_settings)
    if mention and args and args[-1].startswith("-"):
        named = {*ctx.help_option_names, *(o for param in command.params for o in (*param.opts, *param.secondary_opts))}
        if args[-1] not in named:
            return f"`{' '.join(path)}` has no option {args[-1]!r}"
        args = args[:-1]
    try:
        _, extra, _ = command.make_parser(ctx).parse_args(args=args)
    except Exception as exc:  # NoSuchOption, BadOptionUsage, ...: each is the line's problem
        return f"`{' '.join(path)}`: {getattr(exc, 'format_message', exc.__str__)()}"
    if extra and not ctx.allow_extra_args:
        return f"`{' '.join(path)}` takes no argument {extra[0]!r}"
    return None


def make_targets(makefile: Path) -> set[str]:
    """The targets a Makefile defines (rules and .PHONY names)."""
    text = makefile.read_text(encoding="utf-8")
    phony = {t for line in re.findall(r"^\.PHONY:(.*)$", text, re.MULTILINE) for t in line.split()}
    return phony | {t for t in _TARGET.findall(text) if not t.startswith(".")}


def make_problem(words: tuple[str, ...], targets: set[str]) -> str | None:
    """Why a make line names a target the Makefile lacks, or None (VAR=value arguments and options pass)."""
    unknown = [w for w in words[1:] if not w.startswith("-") and not _ASSIGNMENT.match(w) and w not in targets]
    return f"the Makefile has no target(s) {unknown}" if unknown else None
