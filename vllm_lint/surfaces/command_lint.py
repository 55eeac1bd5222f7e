"""Lint one command-line file: extract launches, run the launch rules, render diagnostics and fixes."""

from __future__ import annotations

from dataclasses import replace

from vllm_lint.cmdline.conditions import findings_in_every_rendering
from vllm_lint.cmdline.fix_edits import render_edits
from vllm_lint.cmdline.serve_args import Span, as_span
from vllm_lint.cmdline.launches import Container, Embedded, Extractor, Found
from vllm_lint.cmdline.shell import Environment, ShellSyntaxError
from vllm_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Severity
from vllm_lint.file_roles import is_testing_path
from vllm_lint.launch.record import ImageReference, LaunchFinding, PinImage
from vllm_lint.launch.seen import LAUNCH_SEEN, seen_message
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.registry import check_image, check_launch
from vllm_lint.surfaces.job import CommandParseError, LintJob, parse_error
from vllm_lint.surfaces.embedded import LineView, View
from vllm_lint.text import TextIndex


def extract(
    kind: str,
    text: str,
    api,
    env: Environment | None = None,
    opaque: tuple[tuple[int, int], ...] = (),
    job: LintJob | None = None,
    images_pin: bool = True,
    container: Container | None = None,
    shell_expanded: bool = False,
) -> Extractor:
    """The launches in ``text`` read as ``kind``; ``env``: what a shell script starts with (a notebook's
    ``%env``); ``opaque``: spans whose text is filled in before the shell reads it; ``job``: the file's, for
    the other files of its project a reading needs (a chart's values.yaml); ``images_pin``: whether a
    vllm/vllm-openai image's tag picks the releases its container is judged against; ``container``: what
    runs a shell text declares beside it (a Slurm job's GPUs)."""
    extractor = Extractor(api, text, opaque, images_pin, job.launch_settings.vllm_images if job is not None else ())
    extractor.reader = kind
    if kind == "shell":
        try:
            extractor.script(text, env or Environment(), 0, container)
        except ShellSyntaxError as exc:
            raise CommandParseError(f"shell syntax error: {exc.message}", exc.offset) from None
    elif kind == "dockerfile":
        from vllm_lint.surfaces.dockerfile import extract_dockerfile

        extract_dockerfile(text, extractor, job if job is not None and job.standalone else None)
    elif kind in ("compose", "kubernetes", "yaml"):
        from vllm_lint.surfaces.yaml_files import extract_yaml

        extract_yaml(text, extractor, kind, job, shell_expanded)
    else:
        raise ValueError(kind)
    return extractor


def lint_text(
    kind: str,
    display: str,
    text: str,
    job: LintJob,
    env: Environment | None = None,
    opaque: tuple[tuple[int, int], ...] = (),
    written_only: bool = False,
    container: Container | None = None,
    testing: bool = False,
    reader: str | None = None,
    shell_expanded: bool = False,
) -> list[Diagnostic]:
    """Diagnostics of ``text`` read as ``kind``; ``written_only``: only findings that point at a flag or
    value the text writes, not at the launch for something it lacks (an excerpt shown in documentation);
    ``container``: what runs a shell text declares beside it; ``testing``: its launches are a test's or CI's
    wherever the file is; ``reader``: the kind of file the text was read out of (``--explain-opaque``);
    ``shell_expanded``: a shell fills in its ``$VAR`` before it is read (an unquoted here-document)."""
    index = TextIndex(text)
    api = job.api()
    try:
        extractor = extract(kind, text, api, env, opaque, job, images_pin=job.launch_settings.target_vllm_version is None,
                            container=container, shell_expanded=shell_expanded)
    except CommandParseError as exc:
        if exc.line is not None:
            return [parse_error(display, exc.message, exc.line, exc.column)]
        position = index.position(exc.offset or 0)
        return [parse_error(display, exc.message, position.line, position.column)]
    diagnostics: list[Diagnostic] = []

    def check(launch):
        return check_launch(launch, job.launch_settings, job.enabled)

    testing = testing or is_testing_path(job.path)
    for found in extractor.found:
        found.launch.testing = testing or found.launch.testing
        if reader is not None:
            found.reader = reader
        findings = findings_in_every_rendering(found, check)
        if found.joined is not None:
            findings = found.joined.placed(found, findings, lambda other: findings_in_every_rendering(other, check))
        for finding in findings:
            if written_only and finding.anchor == found.launch.anchor:
                continue
            diagnostic = _diagnostic(display, text, index, found, finding, api)
            related = _values_related(extractor, found, finding, display, job)
            diagnostics.append(replace(diagnostic, related=related) if related else diagnostic)
    for image in extractor.images:
        for finding in check_image(image, job.launch_settings, job.enabled):
            diagnostics.append(_image_diagnostic(display, text, index, image, finding))
    _report_servers(extractor, index, job)
    for document in extractor.documents:
        diagnostics.extend(_embedded(document, display, text, job, testing))
    # two launches that share words (the branches of a template ``if``) say the same of them once
    diagnostics = list(dict.fromkeys(diagnostics))
    if LAUNCH_SEEN in job.enabled:
        diagnostics.extend(_launches_seen(display, index, extractor, job.launch_settings))
    return diagnostics


def _launches_seen(display: str, index: TextIndex, extractor: Extractor, settings: LaunchSettings) -> list[Diagnostic]:
    """One ``LAUNCH_SEEN`` pseudo-diagnostic per launch read (``check --explain-opaque``)."""
    seen = []
    for found in extractor.found:
        message = seen_message(found.launch, found.reader or extractor.reader, settings)
        anchor = found.launch.anchor
        if message is None:
            continue
        position = index.position(anchor.start if isinstance(anchor, Span) else found.command_start)
        seen.append(Diagnostic(LAUNCH_SEEN, message, display, position, position, Severity.INFO, None, ()))
    return seen


def _report_servers(extractor: Extractor, index: TextIndex, job: LintJob) -> None:
    """The vLLM servers the file starts, for the project rules."""
    from vllm_lint.registry import project_codes

    if not job.enabled & project_codes():
        return
    from vllm_lint.project.facts import FileFacts
    from vllm_lint.project.servers import server_fact

    facts = FileFacts()
    for found in extractor.found:
        anchor = found.launch.anchor
        server = server_fact(_unconditional(found), index.position(anchor.start if isinstance(anchor, Span) else 0).line)
        if server is not None:
            facts.servers.append(server)
    job.facts = facts if facts else None


def _unconditional(found: Found):
    """The launch with the port, model and names it is started with in some renderings only (a flag under
    an ``if`` or ``${VAR:+...}``) taken as not known."""
    from vllm_lint.project.servers import ADDRESS_AND_NAMES

    launch = found.launch
    if not found.conditions:
        return launch
    conditional = {s.key for s, c in zip(launch.settings, found.conditions) if c - found.head_condition}
    if not conditional & ADDRESS_AND_NAMES:
        return launch
    return replace(launch, settings=[replace(s, value=None) if s.key in conditional else s for s in launch.settings])


def _values_related(extractor: Extractor, found: Found, finding: LaunchFinding, display: str, job: LintJob) -> tuple:
    """Where in the chart's values.yaml the values of the setting a finding points at are written."""
    locate = extractor.values_locations
    anchor = finding.anchor
    if locate is None or not isinstance(anchor, Span):
        return ()
    import os

    from vllm_lint.diagnostics import Position, RelatedLocation

    places = []
    for setting in found.launch.settings:
        if setting.value is None or not setting.value.origin:
            continue
        spans = [a for a in (setting.anchor, setting.value_anchor) if isinstance(a, Span)]
        if not any(a.start <= anchor.start < max(a.end, a.start + 1) for a in spans):
            continue
        for path, line, column, end_line, end_column, part in locate(setting.value.origin):
            shown = os.path.normpath(os.path.join(os.path.dirname(display), os.path.relpath(path, job.path.parent)))
            message = f"{part}: the chart's default, which an install may override"
            places.append(RelatedLocation(shown, Position(line, column), Position(end_line, end_column), message))
    return tuple(dict.fromkeys(places))


def _image_diagnostic(display: str, text: str, index: TextIndex, image: ImageReference, finding: LaunchFinding) -> Diagnostic:
    from vllm_lint.rulebook import severity_of

    span = as_span(image.anchor)
    start, end = index.position(span.start), index.position(span.end)
    fix = None
    if isinstance(finding.fix, PinImage) and text[span.start : span.end] == image.reference:
        edit = Edit(start, end, finding.fix.reference)
        fix = Fix(finding.applicability, finding.fix_title or "Fix", (edit,))
    severity = finding.severity or severity_of(finding.code, Severity.WARNING)
    return Diagnostic(finding.code, finding.message, display, start, end, severity, fix, (start.line, *_comment_above(index, start.line)))


def _diagnostic(display, text, index, found: Found, finding: LaunchFinding, api) -> Diagnostic:
    from vllm_lint.rulebook import severity_of

    span = finding.anchor if isinstance(finding.anchor, Span) else as_span(found.launch.anchor)
    start, end = index.position(span.start), index.position(span.end)
    severity = finding.severity or severity_of(finding.code, Severity.WARNING)
    fix = None
    if finding.fix is not None and found.fixable:
        edits = render_edits(text, index, found, finding, api)
        if edits:
            fix = Fix(finding.applicability, finding.fix_title or "Fix", tuple(edits))
    # a noqa comment on any line of the command suppresses (from its first word, wrappers included, to its last)
    last = max([span.end, found.launch.anchor.end if isinstance(found.launch.anchor, Span) else span.end]
               + [w.end for w in found.words])
    first = index.position(found.command_start).line
    noqa = {start.line, *range(first, index.position(last).line + 1), *_comment_above(index, first)}
    return Diagnostic(finding.code, finding.message, display, start, end, severity, fix, tuple(sorted(noqa)))


def _embedded(document: Embedded, display: str, text: str, job: LintJob, testing: bool) -> list[Diagnostic]:
    """The findings of a text of another kind the file holds (``Embedded``), placed in the file."""
    if document.view is not None:
        view = document.view
        assert isinstance(view, View)
        return lint_view("shell", view, job, display, env=document.env, testing=testing, reader=document.reader)
    first, last = text.count("\n", 0, document.start), text.count("\n", 0, document.end)
    lines = text.split("\n")
    if document.kind == "systemd":
        from vllm_lint.surfaces.systemd import unit_view

        view, env = unit_view(text, first, last)
        return lint_view("shell", view, job, display, env=env, testing=testing, reader="systemd")
    view = View.empty(text)
    for number in range(first, last):
        line = lines[number]
        tabs = len(line) - len(line.lstrip("\t")) if document.strip_tabs else 0
        if tabs:
            view.put(number, LineView(line).copy(tabs, len(line)))
        else:
            view.keep(number, line)
    # the text is a file of its own only once written out: the files beside this one are not its project's
    inner = replace(job, standalone=False)
    return lint_view(document.kind, view, inner, display, testing=testing, shell_expanded=document.expands)


def lint_view(kind: str, view: View, job: LintJob, display: str, **reading) -> list[Diagnostic]:
    """The findings of ``view`` read as ``kind`` (``reading``: ``lint_text``'s env, container, testing and
    reader), placed in the file; the servers it starts are added to the file's facts."""
    text = view.text
    sub_job = replace(job, data=text.encode("utf-8"), facts=None)
    found = lint_text(kind, display, text, sub_job, **reading)
    job.dependencies.update(sub_job.dependencies)
    if sub_job.facts:
        from vllm_lint.project.facts import FileFacts

        job.facts = job.facts or FileFacts()
        job.facts.servers += sub_job.facts.servers
    return [view.mapped(diagnostic, display) for diagnostic in found]


def _comment_above(index: TextIndex, line: int) -> tuple[int, ...]:
    """The line right above a command when it is a whole-line comment: a ``# noqa`` there covers the command
    (the one place a Dockerfile takes a comment, and the place for a command whose lines are all continued)."""
    above = index.line_text(line - 1).lstrip() if line > 1 else ""
    return (line - 1,) if above.startswith("#") and not above.startswith("#!") else ()


def shift(diagnostic: Diagnostic, lines: int, display: str, extra_noqa: tuple[int, ...] = ()) -> Diagnostic:
    moved = diagnostic.moved(lines)
    return replace(moved, path=display, noqa_lines=tuple(sorted({*moved.noqa_lines, *extra_noqa})))


__all__ = ["Applicability", "CommandParseError", "extract", "lint_text", "lint_view", "shift"]
