"""When VLL109 (streamlit.py) can fire, read off a file's bytes (see vllm_lint.python.prefilter)."""

from __future__ import annotations

from vllm_lint.python.prefilter import Condition, FileBytes, mentions_vllm_engine, present


def _streamlit_model_load(file: FileBytes) -> bool:
    """A model load (vocabulary.is_model_load) in a module that imports streamlit."""
    code = file.code
    return present(code, b"streamlit") and (present(code, b"transformers") or mentions_vllm_engine(code, file.path))


PREFILTER = {
    "VLL109": (Condition("streamlit and a model load", _streamlit_model_load),),
}
