"""Ray Serve LLM's engine in a RayService: ``serveConfigV2`` (a YAML document held in a string) names
``ray.serve.llm:build_openai_app`` with ``llm_configs``, each an ``LLMConfig`` whose ``engine_kwargs`` are
vLLM's engine arguments by their ``AsyncEngineArgs`` (or ``FrontendArgs``) names.

Ray turns an ``LLMConfig`` into the engine's arguments by a fixed recipe (``VLLMEngineConfig`` in
``ray/llm/_internal/serve/engines/vllm/vllm_models.py``): every ``engine_kwargs`` key must be an
``AsyncEngineArgs`` or ``FrontendArgs`` field (any other raises "Unknown engine argument"), ``model`` is
``model_loading_config.model_source`` (its ``model_id`` when no source is given), ``served_model_name`` is
``[model_id]``, and Ray adds only ``distributed_executor_backend`` and ``enable_log_requests``, which no rule
here reads. Everything else is vLLM's own default, so the launch is read in full: the settings written
here are all it sets. In a Helm chart the document's template actions are rendered from values.yaml, and
``{{ toYaml .Values.x | nindent }}`` under ``engine_kwargs`` adds the keys of that values mapping.
"""

from __future__ import annotations

from vllm_lint.cmdline.serve_args import Span
from vllm_lint.surfaces.yaml_nodes import items as _items
from vllm_lint.surfaces.yaml_nodes import mapping_get as _get
from vllm_lint.surfaces.yaml_nodes import scalar as _scalar
from vllm_lint.values import Value

_YAML_TYPES = {"tag:yaml.org,2002:int": int, "tag:yaml.org,2002:float": float}
_ORIGIN = "serveConfigV2 engine_kwargs"


def read_serve_config(document, words) -> None:
    """Each ``llm_configs`` entry of a RayService's ``serveConfigV2`` as one launch (``words``: the
    file's ``yaml_files._YamlWords``)."""
    import yaml

    node = _get(_get(document, "spec"), "serveConfigV2")
    text = _scalar(node)
    if not text or "engine_kwargs" not in text:
        return
    mapping = words.offsets(node)
    try:
        inner = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return
    at = (lambda i: mapping[min(i, len(mapping) - 1)]) if mapping else (lambda i: node.start_mark.index)
    for application in _items(_get(inner, "applications")):
        for config in _items(_get(_get(application, "args"), "llm_configs")):
            kwargs = _get(config, "engine_kwargs")
            if isinstance(kwargs, yaml.MappingNode):
                _launch(config, kwargs, words, at)


class _Reader:
    """Scalars of the inner document as values, with a chart's template actions written out."""

    def __init__(self, words, at) -> None:
        self.words, self.at = words, at

    def span(self, node) -> Span:
        return Span(self.at(node.start_mark.index), self.at(max(node.end_mark.index - 1, node.start_mark.index)) + 1)

    def value(self, node) -> Value | None:
        """What ``node`` holds once rendered, typed as YAML types it; None when a part is not known."""
        import yaml

        raw = _scalar(node)
        if raw is None:
            return None
        origin = _ORIGIN
        template = self.words.template
        if template is not None and template.has_placeholder(raw):
            rendered, rendered_origin = template.value_of(raw)
            if rendered is None:
                return None
            origin = rendered_origin or origin
            if node.style in (None, ""):  # a plain scalar: YAML types what the template wrote
                try:
                    return Value(yaml.safe_load(rendered), origin)
                except yaml.YAMLError:
                    return Value(rendered, origin)
            return Value(rendered, origin)
        typed: object = raw
        if node.tag == "tag:yaml.org,2002:bool":
            typed = raw.lower() in ("true", "yes", "on")
        elif node.tag in _YAML_TYPES:
            try:
                typed = _YAML_TYPES[node.tag](raw)
            except ValueError:
                typed = raw
        return Value(typed, origin)


def _launch(config, kwargs, words, at) -> None:
    from vllm_lint.cmdline.launches import Found
    from vllm_lint.launch.record import Launch

    reader = _Reader(words, at)
    settings, opaque_reasons = [], []
    for key_node, value_node in kwargs.value:
        key = _scalar(key_node)
        if key is not None:
            settings.append(_setting(key, reader.value(value_node), reader.span(key_node).start, reader.span(value_node), words))
    if words.template is not None:
        # from the `engine_kwargs:` key on: lines holding only an action come before the mapping's first key
        key = _key_of(config, kwargs)
        whole = reader.span(kwargs)
        for action in words.template.holes(reader.span(key).end if key is not None else whole.start, whole.end + 1):
            added = _written_mapping(words, action)
            if added is None:
                opaque_reasons.append(f"engine_kwargs written by {{{{ {action.body} }}}}, whose value is not known")
                continue
            where = Span(action.start, action.end)
            for key, value in added.items():
                origin = f"{words.template.values_name} via {{{{ {action.body} }}}}"
                settings.append(_setting(str(key), Value(value, origin), where.start, where, words))
    loading = _get(config, "model_loading_config")
    model_id, source = _get(loading, "model_id"), _get(loading, "model_source")
    model_node = source if _scalar(source) is not None else (model_id if source is None else None)
    if model_node is not None:  # a mapping source is a cloud mirror: the weights' path is Ray's own
        settings.append(_setting("model", reader.value(model_node), reader.span(model_node).start, reader.span(model_node), words, spelled=_scalar(_key_of(loading, model_node))))
    if model_id is not None:
        settings.append(_setting("served_model_name", reader.value(model_id), reader.span(model_id).start, reader.span(model_id), words, spelled="model_id"))
    start = at(kwargs.start_mark.index)
    launch = Launch(surface="command", kind="AsyncEngineArgs", settings=settings, anchor=Span(start, start + 1),
                    serves_requests=True)
    accelerator = _get(config, "accelerator_type")  # Ray Serve LLM's LLMConfig.accelerator_type: the GPU it runs on
    name = reader.value(accelerator) if accelerator is not None else None
    if name is not None and isinstance(name.value, str):
        from vllm_lint.gpus.names import gpu_from_name

        gpu = gpu_from_name(name.value)
        if gpu is not None:
            launch.gpu_type, launch.gpu_type_anchor = gpu.name, reader.span(accelerator)
    for reason in opaque_reasons:
        launch.left_opaque(reason)
    words.extractor.found.append(Found(launch, None, False, [], start, reader=words.extractor.reader))


def _key_of(mapping, value):
    for key, held in mapping.value:
        if held is value:
            return key
    return None


def _written_mapping(words, action) -> dict | None:
    """The mapping ``{{ toYaml .Values.x | nindent n }}`` writes (from values.yaml), or None when not known."""
    from vllm_lint.surfaces.templates import UNKNOWN

    value = words.template.output_value(action)
    if value is UNKNOWN or not isinstance(value, dict):
        return None
    return value


def _setting(key: str, value: Value | None, start: int, value_span: Span, words, spelled: str | None = None):
    import difflib

    from vllm_lint.cmdline.serve_args import invalid_value
    from vllm_lint.launch.record import Setting

    extractor = words.extractor
    api = extractor.api
    flag = extractor.table.by_dest.get(key)
    # Ray sorts each key into AsyncEngineArgs or the OpenAI server's FrontendArgs (a `vllm serve` flag)
    known = key in api.engine_args or key in api.async_engine_args or flag is not None
    fields = api.engine_args | api.async_engine_args
    suggestions = () if known else tuple(difflib.get_close_matches(key, sorted(fields), n=3, cutoff=0.8))
    bad = invalid_value(flag, value.value, parsed=False) if known and flag is not None and value is not None else None
    return Setting(key, spelled or key, known, value, Span(start, value_span.end), value_span, suggestions, bad_choice=bad)
