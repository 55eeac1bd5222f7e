"""LibCST's metadata package is initialised on first use (vllm_lint/python/libcst_loading.py), and whoever uses
it gets all of it. Each check runs in a fresh interpreter: this one imported LibCST long ago."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_libcst_through_vllm_lint_leaves_the_providers_unloaded() -> None:
    out = _run(
        """
        import sys
        import vllm_lint.python.checker  # what a parser process imports
        import libcst
        assert libcst.parse_module("x = 1\\n").code == "x = 1\\n"
        print(sorted(name for name in ("libcst.metadata.scope_provider", "libcst.metadata.type_inference_provider",
                                       "libcst.metadata.full_repo_manager", "subprocess") if name in sys.modules))
        """
    )
    assert out == "[]"


def test_every_way_of_reading_the_package_gets_all_of_it() -> None:
    out = _run(
        """
        import vllm_lint.python
        import libcst
        import libcst.metadata
        from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider
        from libcst.metadata.scope_provider import ScopeProvider as Direct

        assert ScopeProvider is Direct and libcst.metadata.ScopeProvider is Direct
        assert "ParentNodeProvider" in libcst.metadata.__all__
        wrapper = MetadataWrapper(libcst.parse_module("def f(a):\\n    return a\\n"))
        positions = wrapper.resolve(PositionProvider)
        scopes = wrapper.resolve(ScopeProvider)
        assert any(scope is not None and "a" in scope for scope in scopes.values())
        import libcst.codemod, libcst.matchers  # both read names from the package as they load
        try:
            libcst.metadata.NoSuchProvider
        except AttributeError as exc:
            print(exc)
        print(max(p.end.line for p in positions.values()))
        """
    )
    assert out.splitlines() == ["module 'libcst.metadata' has no attribute 'NoSuchProvider'", "3"]


def test_where_libcst_is_already_imported_nothing_changes() -> None:
    out = _run(
        """
        import sys
        import libcst
        import vllm_lint.python
        print("libcst.metadata.scope_provider" in sys.modules, type(sys.modules["libcst.metadata"].__spec__.loader).__name__)
        """
    )
    assert out == "True SourceFileLoader"
