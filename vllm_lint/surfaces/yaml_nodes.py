"""Reading pyyaml's composed nodes: a mapping's value by key (merge keys followed), a scalar's text, a sequence's
items. The YAML surfaces' readers (``yaml_files.py``, ``ray_serve.py``) share them."""

from __future__ import annotations


def mapping_get(node, key: str, depth: int = 0):
    import yaml

    if not isinstance(node, yaml.MappingNode) or depth > 4:
        return None
    merged: list[yaml.Node] = []
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return v
        if isinstance(k, yaml.ScalarNode) and k.tag == "tag:yaml.org,2002:merge":
            merged.extend(v.value if isinstance(v, yaml.SequenceNode) else [v])
    # `<<: *common` (compose's x- extension fields): keys written here win, then the merged mappings in order
    for mapping in merged[:4]:  # bounded: merge chains cannot blow up the lookup
        found = mapping_get(mapping, key, depth + 1)
        if found is not None:
            return found
    return None


def scalar(node) -> str | None:
    import yaml

    return node.value if isinstance(node, yaml.ScalarNode) else None


def items(node) -> list:
    import yaml

    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def pairs(node) -> list:
    """A mapping's (key, value) nodes; none for anything else."""
    import yaml

    return list(node.value) if isinstance(node, yaml.MappingNode) else []


def scripts(node) -> list:
    """The script lines of a CI key: one string, or a list of strings (nested lists flattened, as GitLab's
    ``!reference`` tags leave them)."""
    import yaml

    if isinstance(node, yaml.ScalarNode):
        return [node] if node.value else []
    found: list = []
    for item in items(node):
        if isinstance(item, yaml.SequenceNode):
            found.extend(scripts(item))
        elif isinstance(item, yaml.ScalarNode) and item.value:
            found.append(item)
    return found
