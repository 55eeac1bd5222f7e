"""The tokenizer classes a server file names that transformers 4 implemented in Python, as they answered there.

In transformers 4, ``GPT2Tokenizer`` (a tokenizer class with a ``...TokenizerFast`` twin) was the Python tokenizer,
and ``AutoTokenizer`` (or the ``...Fast`` name) the one backed by the tokenizers library. Transformers 5 made the
name ``GPT2Tokenizer`` the tokenizers-backed class (5.19: ``class GPT2Tokenizer(TokenizersBackend)``, and
``GPT2TokenizerFast`` the same class), where one text's ``length`` (``return_length=True``) is a list of one
(``tokenization_utils_tokenizers.py``: ``encoding_dict["length"].append(len(e.ids))``, left a list when the text is
not batched), where the Python tokenizer gave the number (``tokenization_python.py``, 5.19 as in 4:
``encoded_inputs["length"] = len(encoded_inputs["input_ids"])``). A server written for transformers 4 that adds
to that length (``max_length = tokens["length"] + n``) stops there on transformers 5: for the class names the file
loads a tokenizer by, the launcher gives one text's length as the number again. Nothing else of what they
return differs for one text.
"""

from __future__ import annotations

import ast


def python_tokenizer_names(source: str, transformers) -> set[str]:
    """The names of ``X.from_pretrained(...)`` calls in ``source`` that transformers 4 gave a Python tokenizer:
    ``X`` a tokenizer class of ``transformers`` with a ``XFast`` twin."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "from_pretrained":
            owner = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", None)
            if owner and owner.endswith("Tokenizer") and not owner.startswith("Auto") and hasattr(transformers, owner + "Fast"):
                names.add(owner)
    return names


def _length_as_a_number(call):
    def __call__(self, text=None, *args, **kwargs):
        encoded = call(self, text, *args, **kwargs)
        length = encoded.get("length") if hasattr(encoded, "get") else None
        if (kwargs.get("return_length") and isinstance(text, str) and kwargs.get("return_tensors") is None
                and isinstance(length, list) and len(length) == 1):
            encoded["length"] = length[0]
        return encoded

    return __call__


def answer_as_python_tokenizers(transformers, names: set[str]) -> None:
    """Make each of ``names`` (on ``transformers``) a subclass whose one-text ``length`` is a number, where the
    class it names is not the Python tokenizer (transformers 5); its ``...Fast`` twin is left as it is."""
    for name in sorted(names):
        cls = getattr(transformers, name, None)
        if cls is None or getattr(cls, "_vllm_lint_python_length", False):
            continue
        if "TokenizersBackend" not in {base.__name__ for base in cls.__mro__}:
            continue  # the Python tokenizer itself (transformers 4): its length is a number already
        shim = type(name, (cls,), {"__call__": _length_as_a_number(cls.__call__), "_vllm_lint_python_length": True,
                                    "__module__": cls.__module__})
        setattr(transformers, name, shim)
