"""Imported by Python's ``site`` at start-up in processes a validated server starts (see
:mod:`vllm_lint.reference.spawned`, which puts this folder on their ``PYTHONPATH``)."""

from vllm_lint.reference.spawned import patch_on_import

patch_on_import()
