"""Taskfiles (go-task's ``Taskfile.yml``): each task's ``cmds:`` read as shell with the file's and the task's
``env:``; ``{{.VAR}}`` is a template action, not known here."""

from __future__ import annotations

import yaml

from vllm_lint.cmdline.shell import Environment
from vllm_lint.surfaces.yaml_nodes import mapping_get as get
from vllm_lint.surfaces.yaml_nodes import items, pairs, scripts


def is_task(document) -> bool:
    return get(document, "version") is not None and isinstance(get(document, "tasks"), yaml.MappingNode)


def read(document, words, budget) -> None:
    top = words.env(get(document, "env"), budget)
    for _, task in pairs(get(document, "tasks")):
        budget.spend()
        env = (
            Environment({**top, **words.env(get(task, "env"), budget)})
            if isinstance(task, yaml.MappingNode)
            else Environment(top)
        )
        commands = get(task, "cmds") if isinstance(task, yaml.MappingNode) else task
        lines = []
        for item in items(commands) if isinstance(commands, yaml.SequenceNode) else [commands]:
            lines.extend(scripts(get(item, "cmd") if isinstance(item, yaml.MappingNode) else item))
        for line in lines:
            budget.spend()
            words.script(line, env)
