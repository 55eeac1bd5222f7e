"""vLLM command lines started from Python: which calls start a program, and the launches they make.

``subprocess.Popen(["vllm", "serve", MODEL, "--gpu-memory-utilization", "0.99"])`` is the same launch
as that line in a shell script. The tables below say which argument of which call is the argv, the
command string or the environment; :mod:`vllm_lint.python.argv` reads those arguments as command-line
words, and the command-line extractor builds the launch record, so wrappers (``docker run``, ``env``),
flag emulation and the launch rules are shared with the shell surface. The extractor works on offsets;
the spans it reports are mapped back to the CST node written there.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, replace

import libcst as cst

from vllm_lint.cmdline.launches import Extractor, Found
from vllm_lint.cmdline.serve_args import FlagTable, Span, flag_table
from vllm_lint.cmdline.shell import Environment, Word
from vllm_lint.launch.record import Launch, Setting
from vllm_lint.python.argv import ArgumentReader, Piece, environment
from vllm_lint.python.context import PyContext
from vllm_lint.python.launch_gpus import declared_gpu
from vllm_lint.python.model import CallSite
from vllm_lint.lazy_re import lazy_compile

# callee -> (position, keyword) of the argument list
_ARGV_CALLS: dict[str, tuple[int, str]] = {
    "subprocess.run": (0, "args"),
    "subprocess.Popen": (0, "args"),
    "subprocess.call": (0, "args"),
    "subprocess.check_call": (0, "args"),
    "subprocess.check_output": (0, "args"),
    "os.execv": (1, "argv"),
    "os.execve": (1, "argv"),
    "os.execvp": (1, "args"),
    "os.execvpe": (1, "args"),
    "os.posix_spawn": (1, "argv"),
    "os.posix_spawnp": (1, "argv"),
}
# callee -> position of the first argument, when each argument is its own parameter
_VARARG_CALLS: dict[str, int] = {"asyncio.create_subprocess_exec": 0, "os.execl": 1, "os.execlp": 1}
# callee -> position of a command string run by /bin/sh
_SHELL_CALLS: dict[str, int] = {
    "os.system": 0,
    "os.popen": 0,
    "subprocess.getoutput": 0,
    "subprocess.getstatusoutput": 0,
    "asyncio.create_subprocess_shell": 0,
}
# callee -> position of an env mapping given positionally
_ENV_POSITION: dict[str, int] = {"os.execve": 2, "os.execvpe": 2, "os.posix_spawn": 2, "os.posix_spawnp": 2}
# A module that sets VLLM_API_KEY in its own environment (or loads a .env): the programs it starts inherit it.
_PARENT_SETS_KEY = lazy_compile(
    r"""environ\s*\[\s*["']VLLM_API_KEY["']\s*\]\s*=(?!=)|(?:setdefault|putenv)\s*\(\s*["']VLLM_API_KEY["']"""
    r"""|\.update\([^)]*\bVLLM_API_KEY\s*=|load_dotenv"""
)


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _positional(call: cst.Call, index: int) -> cst.BaseExpression | None:
    positional = [a for a in call.args if a.keyword is None]
    if index < len(positional) and not positional[index].star:
        return positional[index].value
    return None


@dataclass(slots=True)
class CommandLine:
    """A launch found in a Python command line: what fixes need to edit it."""

    found: Found
    pieces: list[Piece]
    originals: dict[int, Setting]  # id(setting with node anchors) -> the same setting with spans
    api: object

    @property
    def table(self) -> FlagTable:
        return flag_table(self.api)

    @property
    def launch_piece(self) -> Piece:
        """The piece the launch's anchor (a span of its command line's words) starts in."""
        anchor = self.found.launch.anchor
        return self.piece_at(anchor.start if isinstance(anchor, Span) else 0)

    def piece_at(self, offset: int) -> Piece:
        starts = [p.start for p in self.pieces]
        return self.pieces[max(bisect.bisect_right(starts, offset) - 1, 0)]


def command_launches(ctx: PyContext) -> Iterator[tuple[Launch, CommandLine, cst.CSTNode]]:
    """Launch records for the vLLM command lines this module starts."""
    api_key_in_module: bool | None = None
    seen: set[int] = set()
    module_names: dict[str, tuple | None] = {}
    for site in ctx.model.calls:
        callee = ctx.semantics.callee(site.node)
        if callee is None or not (callee in _ARGV_CALLS or callee in _VARARG_CALLS or callee in _SHELL_CALLS):
            continue
        args = ArgumentReader(ctx, module_names)
        extractor = _extract(ctx, site, callee, args)
        if extractor is None or not extractor.found:
            continue
        if api_key_in_module is None:
            # os.environ["VLLM_API_KEY"] = ... (or a .env loaded) anywhere in the module: children may inherit a key
            api_key_in_module = bool(_PARENT_SETS_KEY.search(ctx.module.code))
        gpu = declared_gpu(site.function)
        for found in extractor.found:
            if api_key_in_module:
                found.launch.env.setdefault("VLLM_API_KEY", None)
            if gpu is not None and found.launch.gpu_type is None:
                found.launch.gpu_type, found.launch.gpu_type_anchor = gpu
            mapped = _mapped(found, args.pieces, ctx.api)
            # a command built in one place and started from several is one launch
            if id(mapped[0].anchor) in seen:
                continue
            seen.add(id(mapped[0].anchor))
            yield mapped


def _extract(ctx: PyContext, site: CallSite, callee: str, args: ArgumentReader) -> Extractor | None:
    call = site.node
    env_expr = _keyword(call, "env")
    if env_expr is None and callee in _ENV_POSITION:
        env_expr = _positional(call, _ENV_POSITION[callee])
    env = Environment(environment(ctx, env_expr, args, site.function))
    extractor = Extractor(ctx.api, "", images_pin=ctx.settings.target_vllm_version is None)
    if callee in _VARARG_CALLS:
        argv: list[Word] = []
        for arg in [a for a in call.args if a.keyword is None][_VARARG_CALLS[callee] :]:
            if arg.star == "*":
                inner = args.sequence(arg.value, site.statement, site.function)
                argv += inner if inner is not None else [args.splat(arg.value, site.statement)]
            elif arg.star:
                break
            else:
                argv.append(args.element(arg.value, site.statement, None, -1))
        extractor.command(argv, env, None, fixable=False)
        return extractor
    if callee in _SHELL_CALLS:
        command = _positional(call, _SHELL_CALLS[callee]) or _keyword(call, "cmd") or _keyword(call, "command")
    else:
        position, name = _ARGV_CALLS[callee]
        command = _positional(call, position) or _keyword(call, name)
        shell = _keyword(call, "shell")
        folded = ctx.semantics.fold(shell) if shell is not None else None
        if command is not None and folded is not None and folded.value is True and callee.startswith("subprocess."):
            callee = "shell"  # subprocess.run("...", shell=True): a shell string
    if command is None:
        return None
    if callee in _SHELL_CALLS or callee == "shell":
        joined = args.joined(command, site.statement, site.function)
        if joined:
            extractor.command(joined, env, None, fixable=False)
            return extractor
        commands = args.command_string(command, site.statement, site.function)
        if commands is None:
            return None
        extractor.run_commands(commands, env, None, fixable=False)
        return extractor
    words = args.sequence(command, site.statement, site.function)
    if not words:
        return None
    extractor.command(words, env, None, fixable=False)
    return extractor


def _mapped(found: Found, pieces: list[Piece], api) -> tuple[Launch, CommandLine, cst.CSTNode]:
    """The launch with every span replaced by the node written there; the spans kept for fixes."""
    line = CommandLine(found, pieces, {}, api)

    def node(span: object, last: bool = False) -> object:
        if not isinstance(span, Span):
            return span
        return line.piece_at(span.end - 1 if last else span.start).node

    settings = []
    for setting in found.launch.settings:
        mapped = replace(setting, anchor=node(setting.anchor), value_anchor=node(setting.value_anchor))
        line.originals[id(mapped)] = setting
        settings.append(mapped)
    launch = found.launch
    mapped_launch = replace(
        launch,
        settings=settings,
        anchor=node(launch.anchor),
        # the word that names the entrypoint: the module of `python -m ...api_server`, `serve`
        entrypoint_anchor=node(launch.entrypoint_anchor, last=True),
        gpu_count_anchor=node(launch.gpu_count_anchor),
        gpu_type_anchor=node(launch.gpu_type_anchor),
    )
    return mapped_launch, line, line.launch_piece.statement
