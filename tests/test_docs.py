"""The user docs stay true to the code: every ``tags`` command line shown in a code block of
README.md or docs/**/*.md parses with the current CLI, every ``scripts/...`` file a command
names exists, and every relative link (and ``#anchor``) resolves."""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from tags.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_LANGS = {"", "bash", "sh", "shell", "console", "text"}
SEPARATORS = {"|", "||", "&&", ";", "&"}
REDIRECTIONS = {">", ">>", "<", "2>", "2>&1", ">&"}
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Command:
    """One command line of a doc: where it is, its text and the ``tags`` argv it stands for."""

    where: str
    text: str
    argv: tuple[str, ...]


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def code_blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """Fenced code blocks as (line number of the first body line, language, body lines)."""
    blocks, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        match = re.match(r"^\s*(```+|~~~+)\s*([\w+-]*)", lines[i])
        if not match:
            i += 1
            continue
        fence, lang, start, body = match.group(1), match.group(2).lower(), i + 2, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        blocks.append((start, lang, body))
        i += 1
    return blocks


def logical_lines(body: list[str], first: int) -> list[tuple[int, str]]:
    """Shell lines with ``\\`` continuations joined and ``$ `` prompts dropped."""
    out, buffer, start = [], "", first
    for offset, raw in enumerate(body):
        line = raw.rstrip()
        if not buffer:
            start = first + offset
            line = re.sub(r"^\s*\$\s+", "", line)
        if line.endswith("\\"):
            buffer += line[:-1] + " "
            continue
        out.append((start, buffer + line))
        buffer = ""
    if buffer:
        out.append((start, buffer))
    return out


def simple_commands(line: str) -> list[list[str]]:
    """The simple commands of a shell line: split at pipes, ``&&``, ``;``; comments and
    redirections cut."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        words = list(lexer)
    except ValueError:  # an unbalanced quote: not a shell line
        return []
    commands, current, redirected = [], [], False
    for word in words:
        if word in SEPARATORS:
            commands.append(current)
            current, redirected = [], False
        elif word in REDIRECTIONS or redirected:
            redirected = True
        else:
            current.append(word)
    return [c for c in [*commands, current] if c]


def tags_argv(words: list[str]) -> list[str] | None:
    """The ``tags`` argv of a command, or None when it does not run tags.

    Handles ``VAR=value`` prefixes, ``tags``/``.venv/bin/tags``, ``python -m tags`` and
    ``[accelerate launch [options]] [python] scripts/train.py`` (same arguments as
    ``tags train``)."""
    while words and ENV_ASSIGNMENT.match(words[0]):
        words = words[1:]
    if not words:
        return None
    if words[0] == "nice":
        words = words[1:]
        while words and words[0].startswith("-"):
            words = words[2:] if words[0] == "-n" else words[1:]
    if words and words[0] == "accelerate" and words[1:2] == ["launch"]:
        rest = words[2:]
        script = next((k for k, w in enumerate(rest) if w.endswith("train.py")), None)
        return None if script is None else ["train", *rest[script + 1 :]]
    if words and Path(words[0]).name == "tags":
        return words[1:]
    if (
        len(words) >= 3
        and Path(words[0]).name.startswith("python")
        and words[1:3] == ["-m", "tags"]
    ):
        return words[3:]
    if words and words[0].endswith("scripts/train.py"):
        return ["train", *words[1:]]
    return None


def doc_commands(path: Path) -> list[Command]:
    commands = []
    for first, lang, body in code_blocks(path.read_text()):
        if lang not in SHELL_LANGS:
            continue
        for number, line in logical_lines(body, first):
            for words in simple_commands(line):
                argv = tags_argv(words)
                if argv is not None:
                    where = f"{_rel(path)}:{number}"
                    commands.append(Command(where, line.strip(), tuple(argv)))
    return commands


def script_paths(path: Path) -> list[tuple[str, str]]:
    """(where, path) of every ``scripts/...`` file named in a shell code block."""
    found = []
    for first, lang, body in code_blocks(path.read_text()):
        if lang not in SHELL_LANGS:
            continue
        for number, line in logical_lines(body, first):
            for word in (w for words in simple_commands(line) for w in words):
                if re.match(r"^scripts/[\w./-]+\.(py|ya?ml|sh)$", word):
                    found.append((f"{_rel(path)}:{number}", word))
    return found


def parse_problem(argv: list[str] | tuple[str, ...]) -> str | None:
    """None when the CLI accepts ``argv`` in its current spelling, else argparse's message
    (a deprecated alias, which the CLI notes on stderr, counts as a problem)."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(list(argv))
    except SystemExit as exit_:
        help_asked = {"-h", "--help", "--version"} & set(argv)
        if exit_.code not in (0, None) or not help_asked:
            return stderr.getvalue().strip().splitlines()[-1] if stderr.getvalue() else "exit"
    deprecated = [line for line in stderr.getvalue().splitlines() if "deprecated" in line]
    return deprecated[0] if deprecated else None


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\*|~~", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of every line outside fenced code blocks."""
    lines = path.read_text().split("\n")
    in_code = [False] * len(lines)
    for first, _, body in code_blocks("\n".join(lines)):
        for k in range(first - 2, min(first + len(body), len(lines))):
            in_code[k] = True
    return [(n, line) for n, line in enumerate(lines, start=1) if not in_code[n - 1]]


def anchors(path: Path) -> set[str]:
    """The GitHub anchors of a page's headings (repeats get -1, -2, ...)."""
    result, counts = set(), {}
    for _, line in prose_lines(path):
        match = re.match(r"^#{1,6}\s+(.+?)\s*#*$", line)
        if match:
            base = slug(match.group(1))
            count = counts.get(base, 0)
            counts[base] = count + 1
            result.add(base if count == 0 else f"{base}-{count}")
    return result


def links(path: Path) -> list[tuple[str, str]]:
    """(where, target) of every markdown link outside code blocks and inline code."""
    found = []
    for number, line in prose_lines(path):
        line = re.sub(r"`[^`]*`", "", line)
        for match in LINK.finditer(line):
            found.append((f"{_rel(path)}:{number}", match.group(1) or match.group(2)))
    return found


def link_problem(source: Path, target: str) -> str | None:
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
        return None
    file_part, _, anchor = target.partition("#")
    resolved = (source.parent / file_part).resolve() if file_part else source
    if not resolved.exists():
        return f"no such file: {file_part}"
    if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
        return f"no heading #{anchor} in {_rel(resolved)}"
    return None


ALL_COMMANDS = [c for doc in DOCS if doc.exists() for c in doc_commands(doc)]


def test_docs_show_tags_commands():
    """The extraction finds the README's commands (guards against a parser that finds none)."""
    readme = [c for c in ALL_COMMANDS if c.where.startswith("README.md:")]
    assert len(readme) >= 10
    assert any(c.argv[:1] == ("train",) and "accelerate launch" in c.text for c in readme)


@pytest.mark.parametrize("command", ALL_COMMANDS, ids=lambda c: c.where)
def test_documented_command_parses(command: Command):
    problem = parse_problem(command.argv)
    assert problem is None, f"{command.where}: `{command.text}` does not parse: {problem}"


TRAIN_COMMANDS = [
    c for c in ALL_COMMANDS if c.argv[:1] == ("train",) and parse_problem(c.argv) is None
]


@pytest.mark.parametrize("command", TRAIN_COMMANDS, ids=lambda c: c.where)
def test_documented_train_overrides_load(command: Command):
    """A documented ``tags train --config FILE key=value`` names keys the config schema has,
    with values of the right type. Not checked: a config that is a placeholder (CONFIG) and
    a command with ``...`` (options shown above it left out, so it is partial)."""
    from tags.training import load_config

    args = build_parser().parse_args(list(command.argv))
    if not (ROOT / args.config).is_file():
        pytest.skip(f"{args.config} is a placeholder")
    if "..." in args.overrides:
        pytest.skip("a partial command (...)")
    overrides = args.overrides
    try:
        load_config(ROOT / args.config, overrides)
    except Exception as err:  # ConfigError: one line naming the key
        pytest.fail(f"{command.where}: `{command.text}`: {err}")


def script_options(script: Path) -> set[str]:
    """The option strings a script's argparse parsers define (read from its source)."""
    options = set()
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            options |= {
                arg.value
                for arg in node.args
                if isinstance(arg, ast.Constant) and str(arg.value).startswith("-")
            }
    return options


def script_commands(path: Path) -> list[tuple[str, str, str, list[str]]]:
    """(where, line, script, args) of every ``python scripts/....py ARGS`` in a shell block."""
    found = []
    for first, lang, body in code_blocks(path.read_text()):
        if lang not in SHELL_LANGS:
            continue
        for number, line in logical_lines(body, first):
            for words in simple_commands(line):
                while words and ENV_ASSIGNMENT.match(words[0]):
                    words = words[1:]
                python = len(words) >= 2 and Path(words[0]).name.startswith("python")
                if python and re.match(r"^scripts/[\w/]+\.py$", words[1]):
                    where = f"{_rel(path)}:{number}"
                    found.append((where, line.strip(), words[1], words[2:]))
    return found


def test_documented_script_options_exist():
    """Every ``--option`` of a documented ``python scripts/X.py`` command is one the script
    defines, spelt in full."""
    unknown = []
    for doc in DOCS:
        for where, line, script, args in script_commands(doc) if doc.exists() else []:
            if not (ROOT / script).is_file():
                continue  # test_documented_scripts_exist names it
            options = script_options(ROOT / script)
            for arg in args:
                flag = arg.split("=", 1)[0]
                if flag.startswith("--") and flag not in options:
                    unknown.append(f"{where}: {script} has no {flag}: `{line}`")
    assert not unknown, "\n".join(unknown)


def test_documented_scripts_exist():
    missing = [
        f"{where}: {name}"
        for doc in DOCS
        if doc.exists()
        for where, name in script_paths(doc)
        if not (ROOT / name).exists()
    ]
    assert not missing, "\n".join(missing)


def test_relative_links_resolve():
    broken = [
        f"{where}: ({target}) {problem}"
        for doc in DOCS
        if doc.exists()
        for where, target in links(doc)
        if (problem := link_problem(doc, target))
    ]
    assert not broken, "\n".join(broken)


def subcommand_helps() -> dict[str, str]:
    """``tags COMMAND --help`` text of every subcommand."""
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sub.format_help() for name, sub in action.choices.items()}


def test_help_pages_named_exist():
    """A docs page that ``tags COMMAND --help`` points to exists (and its #anchor)."""
    broken = [
        f"tags {name} --help: {ref} {problem}"
        for name, text in subcommand_helps().items()
        for ref in re.findall(r"docs/[\w./-]+\.md(?:#[\w-]+)?", text)
        if (problem := link_problem(ROOT / "README.md", ref))
    ]
    assert not broken, "\n".join(broken)


def test_the_check_refuses_a_broken_command_and_link(tmp_path):
    """The checks are honest: a misspelt flag, an unknown command and a dead link fail."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n```bash\n$ HF_HUB_OFFLINE=1 tags generate --captions C \\\n"
        "    --out o.jsonl --no-such-flag   # comment\ntags frobnicate\n"
        "accelerate launch --num_processes 2 scripts/train.py --config c.yaml a.b=1\n"
        "cat caps.txt | tags parse - --bogus > out.tsv\n```\n\n"
        "[ok](#title) [bad](#nope) [gone](missing.md)\n"
    )
    commands = doc_commands(page)
    assert [c.argv[0] for c in commands] == ["generate", "frobnicate", "train", "parse"]
    assert commands[3].argv == ("parse", "-", "--bogus")  # after the pipe, before the redirection
    assert "--no-such-flag" in parse_problem(commands[0].argv)
    assert parse_problem(commands[1].argv) is not None
    assert parse_problem(commands[2].argv) is None
    assert "--bogus" in parse_problem(commands[3].argv)
    assert parse_problem(["generate", "--captions", "C", "--out", "o.jsonl"]) is None
    assert parse_problem(["parse", "x", "--workers", "2"]) is not None  # an old spelling
    bad_key = ("train", "--config", "scripts/configs/tiny_vse_cpu.yaml", "vse.no_such_key=1")
    with pytest.raises(pytest.fail.Exception, match="no_such_key"):
        test_documented_train_overrides_load(Command("page.md:1", "", bad_key))
    assert "no such file" in link_problem(ROOT / "README.md", "docs/nope.md")
    script = tmp_path / "s.py"
    script.write_text("import argparse\np = argparse.ArgumentParser()\np.add_argument('--seeds')\n")
    assert script_options(script) == {"--seeds"}  # so `--seed 0` in a doc is refused
    problems = [link_problem(page, target) for _, target in links(page)]
    assert problems[0] is None and "nope" in problems[1] and "missing.md" in problems[2]
