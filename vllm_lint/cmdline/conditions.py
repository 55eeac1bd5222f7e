"""Launches whose flags are written under conditions: report only what holds whichever way they go.

A Helm chart's ``{{ if .Values.lora }}--enable-lora{{ end }}``, a shell ``${TP:+--tensor-parallel-size $TP}``:
the flag is there in some renderings of the file and not in others, and the linter cannot know which one
is deployed. Each flag is still checked for its name and value (a misspelt flag inside an ``if`` is
misspelt whenever it is rendered). For the rest, a finding is reported only if it holds in every
rendering in which the place it points at exists: "missing --max-model-len" must hold with the
conditional flags in as well as out, so a ``--max-model-len`` inside an ``if`` keeps it silent, and
"trust_remote_code without a pinned revision" is not silenced by a revision that only an ``if``
writes, nor reported because of one.

Renderings are the subsets of the launch's conditions (each an independent yes/no; an ``else`` branch is a
condition of its own, which can only make the answer stricter, never report more).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from itertools import combinations

from vllm_lint.cmdline.launches import Found
from vllm_lint.cmdline.serve_args import Span
from vllm_lint.launch.record import Launch, LaunchFinding

MAX_CONDITIONS = 6  # 64 renderings; past that the surplus conditions count as one


def findings_in_every_rendering(found: Found, check: Callable[[Launch], Iterable[LaunchFinding]]) -> list[LaunchFinding]:
    launch = found.launch
    if not found.conditions:
        return list(check(launch))
    head = found.head_condition
    own = [condition - head for condition in found.conditions]
    keys = sorted({key for condition in own for key in condition}, key=repr)
    if len(keys) > MAX_CONDITIONS:
        merged = frozenset(keys[MAX_CONDITIONS - 1 :])
        own = [(c - merged) | ({merged} if c & merged else frozenset()) for c in own]
        keys = [*keys[: MAX_CONDITIONS - 1], merged]
    renderings = [frozenset(chosen) for size in range(len(keys) + 1) for chosen in combinations(keys, size)]
    results: list[tuple[frozenset, dict[tuple, LaunchFinding]]] = []
    for rendering in renderings:
        settings = [s for s, condition in zip(launch.settings, own) if condition <= rendering]
        findings = {(f.code, _key(f.anchor)): f for f in check(replace(launch, settings=settings))}
        results.append((rendering, findings))
    needs = _anchor_conditions(launch, own)
    every = results[-1][1]  # the rendering with every conditional flag in: each flag checked once
    reported = []
    for key, finding in {**{k: f for _, found_here in results for k, f in found_here.items()}, **every}.items():
        needed = needs.get(key[1], frozenset())
        if all(key in found_here for rendering, found_here in results if needed <= rendering):
            reported.append(every.get(key, finding))
    return reported


def _key(anchor: object) -> object:
    return (anchor.start, anchor.end) if isinstance(anchor, Span) else id(anchor)


def _anchor_conditions(launch: Launch, own: list[frozenset]) -> dict[object, frozenset]:
    """For each place a finding can point at inside a conditional setting, the conditions it needs."""
    needs: dict[object, frozenset] = {}
    for setting, condition in zip(launch.settings, own):
        if not condition:
            continue
        for anchor in (setting.anchor, setting.value_anchor):
            if isinstance(anchor, Span):
                needs[_key(anchor)] = condition
    return needs
