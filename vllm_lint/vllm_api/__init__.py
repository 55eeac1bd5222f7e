"""vLLM's API in every release from 0.6 to the newest, read off the released wheels (``database.py``).

Rules take every vLLM name from here and never import vLLM themselves: linting must work (and be
fast) on machines where vLLM is not installed. A :class:`VllmApi` is the API of the releases a file
targets (``targets.py``): a name is there if any release in the range has it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

from vllm_lint.vllm_api.database import Database, load_database
from vllm_lint.vllm_api.specifiers import parse
from vllm_lint.vllm_api.versionsets import newest, release_key


@dataclass(frozen=True, slots=True)
class ServeFlag:
    """One option of ``vllm serve``, as its argument parser declares it."""
    dest: str
    option_strings: tuple[str, ...]
    kind: str
    nargs: object
    choices: tuple[str, ...] | None
    default: object = None
    # Values vLLM lists for a flag argparse does not restrict (``--quantization``);
    # ``enforced`` when vLLM rejects any other value later (at model load).
    known_values: tuple[str, ...] | None = None
    known_values_enforced: bool = False

    @property
    def takes_value(self) -> bool:
        return self.kind in ("value", "other") and self.nargs != 0

    @property
    def is_boolean(self) -> bool:
        return self.kind in ("store_true", "store_false", "boolean_optional")


class VllmApi:
    """The API of a set of releases (``mask`` over ``database.versions``): the union of their names."""

    def __init__(self, database: Database, mask: int, target: str | None = None, fit: str = "in") -> None:
        self.database = database
        self.mask = mask
        self.target = target  # the specifier it was made from, as written (None: the newest release)
        # "older": every release the target allows predates the database, whose oldest stands in for
        # them; rules that report names a release lacks stay silent then (those releases had others).
        self.fit = fit
        self.newest_entry = newest(mask)
        self.version: str = database.versions[self.newest_entry]
        # Answers computed once per target: the pre-filter and the checkers ask the same names of every file.
        self._module_names: dict[str, tuple[frozenset[str], bool] | None] = {}
        self._class_attributes: dict[str, frozenset[str] | None] = {}

    @property
    def predates(self) -> bool:
        return self.fit == "older"

    @property
    def label(self) -> str:
        """The target as messages name it: ``0.6.3``, ``0.32``, ``vllm>=0.6,<0.9``, or the newest release."""
        if self.target is None:
            return f"{self.version}, the newest release known"
        text = as_specifier(self.target)
        if text.startswith("==") and "," not in text:
            return text[2:].removesuffix(".*")
        return f"vllm{text}" if text[:1] in "=<>!~^" else text

    def _names(self, masks: dict[str, int]) -> frozenset[str]:
        mask = self.mask
        return frozenset(name for name, releases in masks.items() if releases & mask)

    @cached_property
    def engine_args(self) -> frozenset[str]:
        return self._names(self.database.keyword_masks("engine_args"))

    @cached_property
    def async_engine_args(self) -> frozenset[str]:
        return self._names(self.database.keyword_masks("async_engine_args"))

    @cached_property
    def llm_init_params(self) -> frozenset[str]:
        # LLM(...) takes its own parameters plus every EngineArgs field via **kwargs.
        return self._names(self.database.keyword_masks("llm_init_params")) | self.engine_args

    @cached_property
    def sampling_params(self) -> frozenset[str]:
        return self._names(self.database.keyword_masks("sampling_params"))

    def _default(self, kind: str, field_name: str) -> object:
        """The default in the newest release of the range that has the field."""
        best, value = -1, None
        for candidate, releases in self.database.defaults.get(kind, {}).get(field_name, ()):
            position = newest(releases & self.mask)
            if position > best:
                best, value = position, candidate
        return value

    def engine_default(self, field_name: str) -> object:
        return self._default("engine_args", field_name)

    def sampling_default(self, field_name: str) -> object:
        return self._default("sampling_params", field_name)

    def engine_defaults(self, field_name: str) -> tuple[object, ...]:
        """Every default an EngineArgs field has across the range, oldest release's first."""
        found = [
            (newest(releases & self.mask), value)
            for value, releases in self.database.defaults.get("engine_args", {}).get(field_name, ())
            if releases & self.mask
        ]
        return tuple(value for _, value in sorted(found, key=lambda item: item[0]))

    def effective_defaults(self, field_name: str) -> frozenset:
        """What the field is once vLLM resolved its default, across the range; ``None`` stands for a
        release where that is not known (``enable_prefix_caching``: ``{False}`` until 0.8)."""
        known = self.database.defaults.get("effective", {}).get(field_name, ())
        found = {value for value, releases in known if releases & self.mask}
        covered = 0
        for _, releases in known:
            covered |= releases
        if self.mask & ~covered:
            found.add(None)
        return frozenset(found)

    def _flags(self, surface: int) -> tuple[ServeFlag, ...]:
        # Oldest first: where two records spell the same option (``--enable-prefix-caching`` was a
        # store_true flag before it was a boolean_optional one), the newer one is read last and wins.
        chosen = [
            (newest(record[surface] & self.mask), record) for record in self.database.flags if record[surface] & self.mask
        ]
        chosen.sort(key=lambda item: item[0])
        return tuple(
            ServeFlag(
                dest=record[0],
                option_strings=record[1],
                kind=record[2],
                nargs=record[3],
                choices=record[4],
                known_values=record[5],
                known_values_enforced=record[6],
            )
            for _, record in chosen
        )

    @cached_property
    def serve_flags(self) -> tuple[ServeFlag, ...]:
        return self._flags(7)

    @cached_property
    def api_server_flags(self) -> tuple[ServeFlag, ...]:
        return self._flags(8)

    def allows_abbreviations(self, surface: str = "serve") -> bool:
        return bool(self.database.allow_abbrev.get(surface, 0) & self.mask)

    @cached_property
    def modules(self) -> frozenset[str]:
        return self.database.modules_in(self.mask)

    @property
    def implicit_module_names(self) -> frozenset[str]:
        """Names every module object has (``__file__``, ``__path__``, ...), stored once in the database."""
        return self.database.implicit_module_names

    def module_names(self, module: str) -> tuple[frozenset[str], bool] | None:
        """The public names a module defines (with the implicit ones) and whether that list may be incomplete.

        Names with a leading underscore are not stored: no rule reports them.
        """
        if module not in self._module_names:
            self._module_names[module] = self._read_module_names(module)
        return self._module_names[module]

    def _read_module_names(self, module: str) -> tuple[frozenset[str], bool] | None:
        if not self.database.module_masks().get(module, 0) & self.mask:
            return None
        names = self.database.module_names_in(module, self.mask)
        names.update(self.implicit_module_names)
        return frozenset(names), bool(self.database.open_mask(module) & self.mask)

    def class_attributes(self, qualified_class: str) -> frozenset[str] | None:
        if qualified_class not in self._class_attributes:
            masks = self.database.class_attribute_masks(qualified_class)
            self._class_attributes[qualified_class] = (self._names(masks) or None) if masks is not None else None
        return self._class_attributes[qualified_class]

    def same_class(self, klass: str, other: str) -> bool:
        """Whether, in every release of the range, ``klass`` has exactly ``other``'s attributes (an alias:
        ``vllm.AsyncLLMEngine`` is the V1 ``AsyncLLM`` since 0.10)."""
        first, second = self.database.class_attribute_masks(klass), self.database.class_attribute_masks(other)
        if first is None or second is None:
            return False
        for index in range(len(self.database.versions)):
            release = 1 << index
            if self.mask & release and {n for n, m in first.items() if m & release} != {n for n, m in second.items() if m & release}:
                return False
        return True

    @property
    def image_entrypoints(self) -> frozenset[tuple[str, ...]]:
        """The ENTRYPOINTs of the ``vllm/vllm-openai`` images of the releases in range."""
        return frozenset(
            argv for index, (argv, _) in self.database.entrypoints.items() if self.mask >> index & 1 and argv
        )


@dataclass(frozen=True, slots=True)
class Releases:
    """The database entries a target specifier selects, and how the specifier related to them."""

    mask: int
    # "in": releases in range; "newer": the specifier is past every release known (the newest is
    # used); "older": every release it allows predates the database; "unread": not a specifier.
    fit: str


def select(specifier: str | None, database: Database | None = None) -> Releases:
    """The entries of the releases ``specifier`` allows (``"0.32"``: every 0.32.x; ``"0.8.5"``: that
    release; a PEP 440 or Poetry specifier: every release it accepts)."""
    database = database or load_database()
    newest_only = 1 << (len(database.versions) - 1)
    if specifier is None:
        return Releases(newest_only, "in")
    text = as_specifier(specifier)
    predicate = parse(text)
    if predicate is None:
        return Releases(newest_only, "unread")
    mask = 0
    for release, entry in database.releases.items():
        key = release_key(release)
        if key is not None and predicate(key):
            mask |= 1 << entry
    if mask:
        return Releases(mask, "in")
    pinned = release_key(text.lstrip("=")) if text.startswith("==") and "*" not in text else None
    if pinned is not None and pinned > release_key(database.versions[0]):  # type: ignore[operator]
        # a release the database does not list (newer, or a build between two it has): the closest older one
        older = [entry for release, entry in database.releases.items() if release_key(release) <= pinned]  # type: ignore[operator]
        position = max(older)
        return Releases(1 << position, "newer" if position == len(database.versions) - 1 else "in")
    top = release_key(database.versions[-1])
    assert top is not None
    later = [(top[0], top[1], top[2] + 1, 0, 0, 0), (top[0], top[1] + 1, 0, 0, 0, 0), (top[0] + 1, 0, 0, 0, 0, 0)]
    if any(predicate(key) for key in later):
        return Releases(newest_only, "newer")
    return Releases(0, "older")


def as_specifier(target: str) -> str:
    """The configuration's spellings as specifiers: ``"0.32"`` (a minor release line) is
    ``"==0.32.*"``, ``"0.8.5"`` and ``"v0.8.5"`` are ``"==0.8.5"``."""
    text = target.strip()
    bare = text[1:] if text.startswith("v") else text
    if bare[:1].isdigit():
        parts = bare.split(".")
        if len(parts) == 2 and all(part.isdigit() for part in parts):
            return f"=={bare}.*"
        return f"=={bare}"
    return text


@lru_cache(maxsize=32)
def load_api(target: str | None = None) -> VllmApi:
    """The API of the releases ``target`` allows (a version like ``"0.32"`` or ``"0.8.5"``, or a
    specifier like ``">=0.6,<0.9"``); None, or a target past every release known: the newest release.

    A target older than every release in the database uses the oldest one.
    """
    database = load_database()
    chosen = select(target, database)
    mask = chosen.mask or 1  # older than the database: its oldest release is the closest API known
    return VllmApi(database, mask, target, chosen.fit)
