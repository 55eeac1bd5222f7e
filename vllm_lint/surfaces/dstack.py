"""dstack configurations (``type: task``, ``service``, ``dev-environment``): their ``commands:`` run as one shell
script, with ``env:``, in ``image:`` when one is named, on the GPUs ``resources.gpu`` asks for."""

from __future__ import annotations

import re

from vllm_lint.cmdline.shell import Environment
from vllm_lint.surfaces.yaml_nodes import mapping_get as get
from vllm_lint.surfaces.yaml_nodes import scalar, scripts

_TYPES = frozenset({"task", "service", "dev-environment"})
_COUNT = re.compile(r"^\d+$")


def is_task(document) -> bool:
    return scalar(get(document, "type")) in _TYPES and get(document, "commands") is not None


def gpu_count(node, words) -> int | None:
    """GPUs of ``resources.gpu``: ``A100:2``, ``24GB:2``, ``H100:80GB:8``, ``{name: A100, count: 2}``; one when
    no count is written (dstack's default); None for a range (``1..4``) or what is not known."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        count = get(node, "count")
        text = words.text(count) if count is not None else "1"
        return int(text) if text is not None and _COUNT.match(text.strip()) else None
    text = words.text(node) if isinstance(node, yaml.ScalarNode) else None
    if not text:
        return None
    last = text.strip().split(":")[-1]
    if _COUNT.match(last):
        return int(last)
    return None if ".." in text else 1


def read(document, words, budget) -> None:
    from vllm_lint.cmdline.launches import Container
    from vllm_lint.cmdline.serve_args import Span

    env = Environment(words.env(get(document, "env"), budget))
    gpu = get(get(document, "resources"), "gpu")
    nodes = scalar(get(document, "nodes"))
    container = Container(runtime=False)
    if gpu is not None and nodes in (None, "1"):
        container.gpu_count = gpu_count(gpu, words)
        container.gpu_anchor = Span(gpu.start_mark.index, gpu.end_mark.index)
    image = scalar(get(document, "image"))
    lines = scripts(get(document, "commands"))
    if image:
        container.image = image
        with words.extractor.in_image(image):
            for line in lines:
                words.script(line, env, container)
        return
    for line in lines:
        budget.spend()
        words.script(line, env, container)
