"""The one door to LibCST's private API: its code generation state and each node's ``_codegen``.

LibCST has no public way to generate a node's code at an indentation (``Module.code_for_node`` starts at
none), nor to watch the generation as it goes (``PositionProvider`` does, with the same private state, at
five times the cost). vllm-lint needs both: a fix regenerates one statement at its own indentation
(:mod:`vllm_lint.python.checker`), and the module layout records every node's offsets in one generation
(:mod:`vllm_lint.python.positions`). What they use of LibCST's internals is only what this module imports
or calls; ``tests/test_libcst_private.py`` exercises each piece with the installed LibCST and fails, naming
this module, when an upgrade changes one. pyproject.toml pins the LibCST versions that test has passed on.
"""

from __future__ import annotations

import libcst as cst

try:
    # A dataclass: default_indent, default_newline, indent_tokens, tokens; the hooks a node's _codegen calls
    # (add_token, add_indent_tokens, increase_indent/decrease_indent, before_codegen/after_codegen,
    # record_syntactic_position, pop_trailing_newline).
    from libcst._nodes.internal import CodegenState
except ImportError as exc:  # pragma: no cover - only with a LibCST that pyproject.toml does not allow
    from importlib.metadata import version

    raise ImportError(
        f"LibCST {version('libcst')} has no libcst._nodes.internal.CodegenState, which vllm-lint uses through "
        "vllm_lint/python/libcst_private.py: install a LibCST version that vllm-lint's pyproject.toml allows"
    ) from exc

__all__ = ["CodegenState", "generate", "generated_code"]


def generate(node: cst.CSTNode, state: CodegenState) -> None:
    """Generate ``node``'s code into ``state`` (its tokens, and whatever the state's hooks record)."""
    node._codegen(state)


def generated_code(module: cst.Module, node: cst.CSTNode, indents: list[str]) -> str:
    """``node``'s code as ``module`` would print it inside blocks indented by ``indents`` (outermost first)."""
    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline,
                         indent_tokens=list(indents))
    node._codegen(state)
    return "".join(state.tokens)
