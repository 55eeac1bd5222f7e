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


def gpu_type(node, words) -> str | None:
    """The GPU type of ``resources.gpu`` when it names exactly one (``A100:80GB:2``, ``{name: H100}``), as
    ``vllm_lint.gpus`` names it; None for a memory size alone, several names, or what is not known."""
    import yaml

    from vllm_lint.gpus.names import gpu_from_name

    if isinstance(node, yaml.MappingNode):
        name = get(node, "name")
        text = words.text(name) if isinstance(name, yaml.ScalarNode) else None
        memory = get(node, "memory")
        size = words.text(memory) if isinstance(memory, yaml.ScalarNode) else None
        parts = [text or "", size or ""]
    else:
        text = words.text(node) if isinstance(node, yaml.ScalarNode) else None
        parts = text.strip().split(":") if text else []
    names = [part for part in parts if part and not _COUNT.match(part) and not part.upper().endswith("GB")]
    if len(names) != 1 or "," in names[0] or ".." in names[0]:
        return None
    sizes = [part for part in parts if part.upper().endswith("GB") and ".." not in part]
    gpu = gpu_from_name(" ".join([names[0], *sizes[:1]]))
    return gpu.name if gpu is not None else None


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
        container.gpu_type = gpu_type(gpu, words)
        container.gpu_type_anchor = container.gpu_anchor
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
