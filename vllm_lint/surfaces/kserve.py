"""KServe: an InferenceService's predictor runs the ServingRuntime it names, with the model's container merged
into the runtime's as KServe merges them (kserve/kserve, pkg/controller/v1beta1/inferenceservice/utils/utils.go,
``MergeRuntimeContainers``: a strategic merge patch of the runtime's ``kserve-container`` by the model's, except
``args``, which are the runtime's followed by the model's; ``MergePodSpec``: the predictor's pod fields over the
runtime's). Read when both are in the same file; a runtime that an InferenceService there uses is read through it.
"""

from __future__ import annotations

from vllm_lint.surfaces.yaml_nodes import items, pairs, scalar
from vllm_lint.surfaces.yaml_nodes import mapping_get as get

RUNTIME_KINDS = ("ServingRuntime", "ClusterServingRuntime")
# the runtime container KServe merges the model into (constants.InferenceServiceContainerName)
_CONTAINER = "kserve-container"
_APPENDED = ("args", "env")  # lists whose items the model adds to the runtime's (env entries set later win)
# a predictor model's fields that are not the container's
_MODEL_ONLY = frozenset({"modelFormat", "runtime", "storageUri", "storage", "protocolVersion"})
# a predictor's fields that are not the pod's
_PREDICTOR_ONLY = frozenset({"model", "containers", "minReplicas", "maxReplicas", "scaleTarget", "scaleMetric"})


class Runtimes:
    """The ServingRuntimes of one file, by name, and those an InferenceService of the file runs."""

    def __init__(self, documents) -> None:
        self.specs: dict[str, object] = {}
        wanted: set[str] = set()
        for document in documents:
            kind = scalar(get(document, "kind"))
            if kind in RUNTIME_KINDS:
                name = scalar(get(get(document, "metadata"), "name"))
                if name:
                    self.specs.setdefault(name, get(document, "spec"))
            elif kind == "InferenceService":
                name = scalar(get(get(get(get(document, "spec"), "predictor"), "model"), "runtime"))
                if name:
                    wanted.add(name)
        self.used = frozenset(name for name in wanted if self._container(name) is not None)

    def _container(self, name: str):
        return next(
            (c for c in items(get(self.specs.get(name), "containers")) if scalar(get(c, "name")) == _CONTAINER), None
        )

    def read_through_service(self, runtime_document) -> bool:
        """A runtime an InferenceService of the file runs (read there, with the model's settings)."""
        return scalar(get(get(runtime_document, "metadata"), "name")) in self.used

    def pod_spec(self, predictor):
        """The pod spec a predictor runs: its runtime's, merged with its model; None when its runtime is not
        in the file."""
        model = get(predictor, "model")
        name = scalar(get(model, "runtime"))
        if name not in self.used:
            return None
        runtime = self.specs[name]
        container = _merge(_without(model, _MODEL_ONLY), self._container(name))
        containers = [
            container if scalar(get(c, "name")) == _CONTAINER else c for c in items(get(runtime, "containers"))
        ]
        spec = _merge(_without(predictor, _PREDICTOR_ONLY), _without(runtime, frozenset({"containers"})))
        return _mapping([(_key("containers", runtime), _sequence(containers, runtime)), *spec.value], runtime)


def _merge(over, base):
    """``over`` merged into ``base`` as a strategic merge patch does for the fields read here: mappings merged
    key by key, ``args``/``env`` appended, any other value replaced."""
    import yaml

    if not isinstance(over, yaml.MappingNode) or not isinstance(base, yaml.MappingNode):
        return over if over is not None else base
    merged = []
    for key, value in pairs(base):
        name = scalar(key)
        mine = get(over, name) if name is not None else None
        if mine is None:
            merged.append((key, value))
        elif name in _APPENDED and isinstance(value, yaml.SequenceNode) and isinstance(mine, yaml.SequenceNode):
            merged.append((key, _sequence([*value.value, *mine.value], value)))
        else:
            merged.append((key, _merge(mine, value)))
    known = {scalar(key) for key, _ in pairs(base)}
    merged += [(key, value) for key, value in pairs(over) if scalar(key) not in known]
    return _mapping(merged, base)


def _without(node, names: frozenset[str]):
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return node
    return _mapping([(key, value) for key, value in pairs(node) if scalar(key) not in names], node)


def _mapping(value, like):
    import yaml

    return yaml.MappingNode("tag:yaml.org,2002:map", value, like.start_mark, like.end_mark)


def _sequence(value, like):
    import yaml

    return yaml.SequenceNode("tag:yaml.org,2002:seq", value, like.start_mark, like.end_mark)


def _key(name: str, like):
    import yaml

    return yaml.ScalarNode("tag:yaml.org,2002:str", name, like.start_mark, like.start_mark)
