"""The run: from paths to diagnostics and fixed files.

Discovery (.gitignore-aware walk), the per-file lint through the surfaces, suppressions (noqa, skip-file,
per-file-ignores), worker processes, the result cache and the fixer. It knows surfaces only through ``vllm_lint.surfaces``' registry.
"""
