"""cloud-init user data (``#cloud-config``): ``bootcmd``/``runcmd`` entries run as shell (a list entry as the
command's words), and ``write_files`` entries are read as the files they write: a script as shell, a systemd
unit's commands, a Dockerfile, a compose file or a manifest as theirs (a literal block, ``content: |``, whose
lines stand in the file as they will in the written file)."""

from __future__ import annotations

from vllm_lint.cmdline.launches import Embedded, heredoc_kind
from vllm_lint.cmdline.shell import Environment
from vllm_lint.surfaces.yaml_nodes import mapping_get as get
from vllm_lint.surfaces.yaml_nodes import items, scalar

_KEYS = ("runcmd", "bootcmd", "write_files")


def is_cloud_config(document, text: str) -> bool:
    return text.startswith("#cloud-config") or (
        get(document, "kind") is None and any(get(document, key) is not None for key in _KEYS)
    )


def read(document, words, budget) -> None:
    import yaml

    env = Environment()
    extractor = words.extractor
    for entry in [*items(get(document, "bootcmd")), *items(get(document, "runcmd"))]:
        budget.spend()
        if isinstance(entry, yaml.ScalarNode):
            words.script(entry, env)
        elif isinstance(entry, yaml.SequenceNode):
            extractor.command(words.sequence_words(entry, env), env, None, fixable=False)
    for entry in items(get(document, "write_files")):
        budget.spend()
        content, path = get(entry, "content"), scalar(get(entry, "path")) or ""
        if not isinstance(content, yaml.ScalarNode) or scalar(get(entry, "encoding")) not in (None, "", "text/plain"):
            continue
        if "vllm" not in content.value.lower():
            continue
        kind = heredoc_kind(["cat"], [], path, content.value)
        if kind == "script":
            words.script(content, Environment())
        elif kind is not None and content.style == "|":
            _written_file(kind, content, words)


def _written_file(kind: str, content, words) -> None:
    """A literal block's lines, read as the ``kind`` of file they are (their common indentation kept:
    YAML and Dockerfiles read the same with it, a unit's reader takes it off)."""
    source = words.source
    lines = source.split("\n")
    first, last = content.start_mark.line + 1, content.end_mark.line
    if content.end_mark.column:
        last += 1  # the block ends on its last line, without a line break after it
    body = [line for line in lines[first:last] if line.strip()]
    if not body:
        return
    indent = min(len(line) - len(line.lstrip(" ")) for line in body)
    if kind == "systemd":
        from vllm_lint.surfaces.systemd import unit_view

        view, env = unit_view(source, first, last, indent)
        words.extractor.documents.append(Embedded("shell", view=view, env=env, reader="cloud-init"))
        return
    start = sum(len(line) + 1 for line in lines[:first])
    end = start + sum(len(line) + 1 for line in lines[first:last])
    words.extractor.documents.append(Embedded(kind, start, min(end, len(source))))
