"""Dockerfile extractor: RUN/CMD/ENTRYPOINT in shell and JSON form, ENV/ARG values, ENTRYPOINT+CMD pairing."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vllm_lint.cmdline.serve_args import Span
from vllm_lint.cmdline.launches import Extractor
from vllm_lint.cmdline.shell import Environment, ShellSyntaxError, Word, tokenize
from vllm_lint.launch.record import Reach

INSTRUCTIONS = frozenset(
    ["FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"]
)
_HEREDOC = re.compile(r"<<-?\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?")


@dataclass(slots=True)
class Instruction:
    keyword: str
    line: int
    start: int  # offset of the keyword
    args_start: int
    end: int  # end of the logical line
    heredoc: tuple[int, int] | None = None


@dataclass(slots=True)
class Stage:
    image: str = ""
    name: str | None = None
    env: Environment = field(default_factory=Environment)
    entrypoint: Instruction | None = None
    cmd: Instruction | None = None
    workdir: str | None = None  # None: the base image's, not known
    copies: list = field(default_factory=list)  # build_context.Copy of each COPY/ADD from the context


def _instructions(text: str) -> list[Instruction]:
    from vllm_lint.surfaces.job import CommandParseError

    result = []
    i, n, line_no = 0, len(text), 1
    while i < n:
        line_end = text.find("\n", i)
        line_end = n if line_end == -1 else line_end
        line = text[i:line_end]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            i, line_no = line_end + 1, line_no + 1
            continue
        indent = len(line) - len(line.lstrip())
        match = re.match(r"[A-Za-z]+", line[indent:])
        keyword = match.group(0).upper() if match else ""
        if keyword not in INSTRUCTIONS:
            shown = match.group(0) if match else stripped.split()[0]
            raise CommandParseError(f"unknown Dockerfile instruction {shown!r}", line=line_no, column=indent + 1)
        start = i + indent
        args_start = start + len(keyword)
        first_line = line_no
        end = line_end
        # continuation lines (comment and blank lines inside a continuation are dropped by docker)
        last = line
        while last.rstrip("\r").rstrip().endswith("\\") and end < n:
            next_end = text.find("\n", end + 1)
            next_end = n if next_end == -1 else next_end
            added = text[end + 1 : next_end]
            end = next_end
            line_no += 1
            if added.strip() and not added.lstrip().startswith("#"):
                last = added
        instruction = Instruction(keyword, first_line, start, args_start, end)
        heredoc = _HEREDOC.search(text[args_start:end]) if keyword in ("RUN", "COPY", "ADD") else None
        if heredoc:
            body_start = end + 1
            j = body_start
            while j < n:
                body_line_end = text.find("\n", j)
                body_line_end = n if body_line_end == -1 else body_line_end
                line_no += 1
                if text[j:body_line_end].strip() == heredoc.group(1):
                    instruction.heredoc = (body_start, j)
                    end = body_line_end
                    break
                j = body_line_end + 1
            else:
                raise CommandParseError(f"unterminated heredoc <<{heredoc.group(1)}", line=first_line, column=1)
        result.append(instruction)
        i, line_no = end + 1, line_no + 1
    return result


_JSON_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _json_string(text: str, i: int, end: int) -> tuple[str, list[int], int] | None:
    """The JSON string at ``text[i] == '"'`` as Docker reads it, its lines joined first (a backslash at
    the end of a line continues it, inside a string too): its value, each character's offset, and the
    index after its closing quote; None when it is not one."""
    chars: list[str] = []
    offsets: list[int] = []
    j = i + 1
    while j < end:
        c = text[j]
        if c == '"':
            return "".join(chars), offsets, j + 1
        if c == "\\":
            after = text[j + 1 : j + 3]
            if after.startswith("\n") or after == "\r\n":
                j += 2 if after.startswith("\n") else 3
                continue
            escape = text[j + 1 : j + 2]
            if escape == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[j + 2 : j + 6]):
                chars.append(chr(int(text[j + 2 : j + 6], 16)))
                offsets.append(j)
                j += 6
                continue
            if escape not in _JSON_ESCAPES:
                return None
            chars.append(_JSON_ESCAPES[escape])
            offsets.append(j)
            j += 2
            continue
        if c in "\r\n":
            return None
        chars.append(c)
        offsets.append(j)
        j += 1
    return None


def _json_words(text: str, start: int, end: int) -> list[Word] | None:
    """The exec form ``["a", "b"]`` as words with offsets, or None when it is not valid JSON."""
    body = text[start:end]
    lead = len(body) - len(body.lstrip())
    if not body.lstrip().startswith("["):
        return None
    i = start + lead + 1
    words: list[Word] = []
    while True:
        while i < end and text[i] in " \t\r\n\\":
            i += 1
        if i < end and text[i] == "]" and not words:
            return words if not text[i + 1 : end].strip() else None
        if i >= end or text[i] != '"':
            return None
        decoded = _json_string(text, i, end)
        if decoded is None:
            return None
        value, offsets, stop = decoded
        known = None if "$" in value else value
        parts = [("lit", value)] if known is not None else [("lit", value[: value.index("$")]), ("unknown",)]
        word = Word(text[i:stop], i, stop, parts, True, known, single=True)
        word.offsets = offsets
        # the argument as the program gets it (exec form expands nothing): a script `sh -c` reads
        word.script = (value, offsets + [stop - 1], ())
        words.append(word)
        i = stop
        while i < end and text[i] in " \t\r\n\\":
            i += 1
        if i < end and text[i] == ",":
            i += 1
            continue
        if i < end and text[i] == "]":
            return words if not text[i + 1 : end].strip() else None
        return None


def _assign_env(stage: Stage, text: str, instruction: Instruction, keyword: str) -> None:
    args = text[instruction.args_start : instruction.end]
    try:
        commands = tokenize(args, instruction.args_start)
    except ShellSyntaxError:
        return
    words = [w for c in commands for w in c.words]
    if not words:
        return
    if "=" not in words[0].raw and keyword == "ENV" and len(words) > 1:
        # legacy `ENV NAME value with spaces`
        value = " ".join(stage.env.expand(w).value or "" for w in words[1:])
        stage.env.vars[words[0].raw] = None if any(w.value is None for w in words[1:]) else _value(value, words[0].raw)
        return
    for word in words:
        if not stage.env.assign(word) and keyword == "ARG":
            stage.env.vars.setdefault(word.raw, None)


def _value(text: str, name: str):
    from vllm_lint.values import Value

    return Value(text, f"ENV {name}")


def _without_continued_comments(text: str) -> str:
    """``text`` with the comment and blank lines inside a continued instruction blanked out, newline
    included (Docker drops them before the shell sees the line), every other offset unchanged."""
    out: list[str] = []
    continued = False
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if continued and (not body.strip() or body.lstrip().startswith("#")):
            out.append(" " * len(line))
            continue
        out.append(line)
        continued = body.rstrip().endswith("\\") if continued or not body.lstrip().startswith("#") else False
    return "".join(out)


def extract_dockerfile(text: str, extractor: Extractor, job=None) -> None:
    """``job``: the Dockerfile's, whose build context holds the scripts it copies (None: not read)."""
    instructions = _instructions(text)
    text = _without_continued_comments(text)
    stages: list[Stage] = []
    global_env = Environment()
    stage: Stage | None = None
    for instruction in instructions:
        keyword = instruction.keyword
        if keyword == "FROM":
            parts = text[instruction.args_start : instruction.end].split()
            parts = [p for p in parts if not p.startswith("--")]
            image = parts[0] if parts else ""
            _from_image(extractor, text, instruction, global_env, {s.name for s in stages if s.name})
            name = parts[2] if len(parts) >= 3 and parts[1].lower() == "as" else None
            parent = next((s for s in stages if s.name and s.name == image), None)
            stage = Stage(image=parent.image if parent else image, name=name)
            stage.env = (parent.env if parent else global_env).copy()
            if parent:
                stage.entrypoint, stage.cmd = parent.entrypoint, parent.cmd
                stage.workdir, stage.copies = parent.workdir, list(parent.copies)
            stages.append(stage)
            continue
        current = stage or Stage(env=global_env)
        if keyword in ("ENV", "ARG"):
            _assign_env(current, text, instruction, keyword)
            continue
        if keyword in ("WORKDIR", "COPY", "ADD"):
            from vllm_lint.surfaces.build_context import parse_copy, workdir_after

            args = text[instruction.args_start : instruction.end]
            if keyword == "WORKDIR":
                current.workdir = workdir_after(current.workdir, args)
            else:
                copied = parse_copy(args, current.workdir)
                if copied is not None:
                    current.copies.append(copied)
            continue
        if keyword == "RUN":
            if instruction.heredoc:
                body_start, body_end = instruction.heredoc
                _run_shell(extractor, text[body_start:body_end], current.env.copy(), body_start)
                continue
            _run(extractor, text, instruction, current.env.copy())
            continue
        if keyword == "ENTRYPOINT":
            current.entrypoint = instruction
            current.cmd = None  # ENTRYPOINT resets an inherited CMD
        elif keyword == "CMD":
            current.cmd = instruction
    if stages:
        before = len(extractor.found)
        _final(extractor, text, stages[-1], job)
        for found in extractor.found[before:]:
            found.launch.image = stages[-1].image
    for found in extractor.found:
        found.launch.reach = Reach(known=False)  # the containers that run this image say how they are reached


def _from_image(extractor: Extractor, text: str, instruction: Instruction, env: Environment, stage_names: set[str]) -> None:
    """The image a ``FROM`` names (not an earlier stage), expanded with the ARGs declared before the first FROM."""
    try:
        commands = tokenize(text[instruction.args_start : instruction.end], instruction.args_start)
    except ShellSyntaxError:
        return
    words = [w for command in commands for w in command.words if not w.raw.startswith("--")]
    if not words:
        return
    word = env.expand(words[0])
    if word.value is None or word.value.lower() in {name.lower() for name in stage_names} or word.value == "scratch":
        return
    extractor.image(word.value, Span(word.start, word.end), word.raw == word.value)


def _run_shell(extractor: Extractor, script: str, env: Environment, base: int) -> None:
    from vllm_lint.surfaces.job import CommandParseError

    try:
        extractor.script(script, env, base)
    except ShellSyntaxError as exc:
        raise CommandParseError(f"shell syntax error: {exc.message}", exc.offset) from None


def _run(extractor: Extractor, text: str, instruction: Instruction, env: Environment) -> None:
    words = _json_words(text, instruction.args_start, instruction.end)
    if words is not None:
        if words:
            extractor.command(words, env, None, fixable=False)
        return
    _run_shell(extractor, text[instruction.args_start : instruction.end], env, instruction.args_start)


def _final(extractor: Extractor, text: str, stage: Stage, job) -> None:
    entry, cmd = stage.entrypoint, stage.cmd
    env = stage.env.copy()
    if entry is not None:
        entry_words = _json_words(text, entry.args_start, entry.end)
        if entry_words is None:
            _run(extractor, text, entry, env)  # shell-form ENTRYPOINT ignores CMD
            return
        exec_cmd = _json_words(text, cmd.args_start, cmd.end) if cmd is not None else None
        cmd_words = exec_cmd or []
        # without a CMD (docker run's arguments) or with a shell-form one, the script's "$@" is not known
        if job is not None and exec_cmd is not None and _wrapper(extractor, stage, [*entry_words, *cmd_words], env, job):
            return
        if entry_words or cmd_words:
            extractor.command([*entry_words, *cmd_words], env, None, fixable=False)
        return
    if cmd is None:
        return
    if extractor.runs_vllm_image(stage.image):
        image_args = _json_words(text, cmd.args_start, cmd.end)
        if image_args is not None and not (image_args and (image_args[0].value or "").rsplit("/", 1)[-1] in ("vllm", "python", "python3", "sh", "bash")):
            anchor = Span(cmd.start, cmd.start + 3)
            extractor.image_default(image_args, env, None, False, stage.image, anchor, cmd.start, pin=False)
            return
    _run(extractor, text, cmd, env)


_INIT_PROGRAMS = frozenset({"tini", "dumb-init"})
_NOT_SCRIPTS = frozenset({"vllm", "env", "exec"})


def _wrapper(extractor: Extractor, stage: Stage, words: list[Word], env: Environment, job) -> bool:
    """ENTRYPOINT + CMD that run a shell script this image copied from the build context (``ENTRYPOINT
    ["/entrypoint.sh"]``, behind ``tini --`` or ``bash`` too): the script read with the rest as its
    arguments. False when the program is not such a script, or the script is not found."""
    from vllm_lint.surfaces.build_context import copied_script, program_paths

    i = 0
    while i < len(words) and (words[i].value or "").rsplit("/", 1)[-1] in _INIT_PROGRAMS:
        i += 1
        while i < len(words) and (words[i].value or "").startswith("-"):
            i += 1  # tini's options, and the `--` before the program
    program = words[i] if i < len(words) else None
    if program is not None and (program.value or "").rsplit("/", 1)[-1] in ("sh", "bash") and i + 1 < len(words):
        i += 1
        program = words[i]
    name = program.value if program is not None else None
    if program is None or not name or name.startswith("-") or name.rsplit("/", 1)[-1] in _NOT_SCRIPTS or name.rsplit("/", 1)[-1].startswith("python") or not stage.copies:
        return False
    script = copied_script(job, stage.copies, program_paths(name, stage.workdir))
    if script is None:
        return False
    script_name, script_text = script
    extractor.wrapper_script(script_name, script_text, words[i + 1 :], env, Span(program.start, program.end))
    return True
