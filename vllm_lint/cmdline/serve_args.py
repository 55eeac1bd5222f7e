"""`vllm serve` flag parsing, emulating vLLM's argparse front-end from the API snapshot.

``_`` and ``-`` are the same inside a flag name, ``--flag=value`` equals
``--flag value``, unique prefixes are accepted, ``--no-<flag>`` negates a
boolean, ``--max-model-len`` takes ``k/K/m/M/g/G`` suffixes. No flag name is
typed here: every name, kind and choice set comes from ``load_api().serve_flags``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from vllm_lint.cmdline.shell import Word
from vllm_lint.launch.record import Setting
from vllm_lint.suggestions import close_names
from vllm_lint.values import Value
from vllm_lint.lazy_re import lazy_compile

_NEGATIVE_NUMBER = lazy_compile(r"^-\d")
# ``vllm --version``'s option (vllm/entrypoints/cli/main.py), also written after ``serve``: the command
# exits without serving (with a usage error there), so it is no launch to judge
_VERSION_OPTIONS = frozenset({"-v", "--version"})
_SIZE = lazy_compile(r"^(\d+(?:\.\d+)?)([kKmMgG])$")
_SIZE_FACTORS = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}


@dataclass(frozen=True, slots=True)
class Span:
    """Offsets into the linted text: ``start`` up to (not including) ``end``."""

    start: int
    end: int


def as_span(anchor: object) -> Span:
    """The anchor of something read from text (a command line's launch or setting, an image reference): a Span."""
    if not isinstance(anchor, Span):
        raise TypeError(f"an anchor in text is a Span, not {type(anchor).__name__}")
    return anchor


class FlagTable:
    """The flags of ``vllm serve`` (``surface="serve"``) or of ``python -m vllm.entrypoints.openai.api_server``
    in the releases ``api`` covers; before 0.10 the module's parser lacked the serve-only ones."""

    def __init__(self, api, surface: str = "serve") -> None:
        flags = api.api_server_flags if surface == "api_server" else api.serve_flags
        self.exact: dict = {}
        for flag in flags:
            for option in flag.option_strings:
                self.exact[option] = flag
        self.long_options = sorted(o for o in self.exact if o.startswith("--"))
        self.by_dest = {flag.dest: flag for flag in flags if flag.kind != "help"}

    def lookup(self, name: str):
        """The flag ``name`` (already normalised) selects, with its candidates when ambiguous."""
        flag = self.exact.get(name)
        if flag is not None:
            return flag, ()
        if not name.startswith("--"):
            return None, ()
        candidates = [o for o in self.long_options if o.startswith(name)]
        dests = {self.exact[o].dest for o in candidates}
        if len(dests) == 1:
            # `--no-x` prefixes select the negative form only when every candidate is negative
            return self.exact[candidates[0]], tuple(candidates)
        return None, tuple(candidates[:3])

    def suggest(self, name: str) -> tuple[str, ...]:
        return close_names(name, self.long_options)


@lru_cache(maxsize=16)
def flag_table(api, surface: str = "serve") -> FlagTable:
    return FlagTable(api, surface)


def normalise(option: str) -> str:
    if option.startswith("--"):
        return "--" + option[2:].replace("_", "-")
    return option


def convert_value(dest: str, text: str, flag_type: str | None = None) -> object:
    if dest == "max_model_len":
        match = _SIZE.match(text.strip())
        if match:
            number = float(match.group(1)) * _SIZE_FACTORS[match.group(2)]
            return int(number)
    return text


@dataclass(slots=True)
class ParsedArgs:
    """The settings of a vLLM command line, and whether some of it could not be read."""
    settings: list[Setting]
    opaque: bool = False
    conditions: list[frozenset] | None = None  # per setting: when it is there (see ``Word.condition``)
    reasons: list[str] = field(default_factory=list)  # why it is opaque (``Launch.opaque_reasons``)
    # The words ask for help (``--help``, ``-h``, ``--help=all``) or the version: the command prints and
    # exits, it starts no server.
    prints_only: bool = False


def _value_of(word: Word) -> Value | None:
    if word.value is None:
        return None
    return Value(word.value, word.origin)


# Settings vLLM's ModelConfig lowercases before it checks them: quantization, dtype and tokenizer_mode
# (vllm/config.py's ModelConfig._verify_quantization, _verify_tokenizer_mode and _get_and_verify_dtype in
# 0.6.3 and 0.8.5; vllm/config/model.py's field validators and _get_and_verify_dtype in 0.33.0)
_LOWERCASED = frozenset({"quantization", "dtype", "tokenizer_mode"})


def invalid_value(flag, value: object, parsed: bool = True) -> tuple[str, ...] | None:
    """The values vLLM accepts for ``flag`` when ``value`` is not one of them, else None.

    argparse ``choices`` are checked by the parser itself, as written (``parsed``: the value is a command
    line's, which goes through that parser; an engine keyword does not); ``known_values`` only when vLLM
    enforces them (``--quantization``: unknown methods fail at model load), after its config lowercased
    the ones it lowercases (``quantization="AWQ"`` is AWQ).
    """
    accepted = flag.choices
    as_written = accepted is not None and parsed
    if accepted is None and flag.known_values_enforced:
        accepted = flag.known_values
    if accepted is None or isinstance(value, bool) or not isinstance(value, (str, int)):
        return None  # None, numbers with a fraction, objects: nothing to compare
    given = str(value).split() if flag.nargs in ("+", "*") else [str(value)]
    if flag.dest in _LOWERCASED and not as_written:
        given = [item.lower() for item in given]
    return None if all(item in accepted for item in given) else accepted


def _flag_name(word: Word) -> str | None:
    """The option a word spells, also when its value is unknown (``--max-model-len=$LEN``)."""
    if word.value is not None:
        return word.value.partition("=")[0]
    prefix = word.literal_prefix
    if prefix.startswith("-") and "=" in prefix:
        return prefix.partition("=")[0]
    return None


_ARRAY_WORD = lazy_compile(r"\$\{#?!?([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]")
_VARIABLE_WORD = lazy_compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


def opaque_reason(word: Word) -> str:
    """Why a word may stand for arguments that cannot be seen, as a short stable phrase."""
    if word.why is not None:
        return word.why
    raw = word.raw
    if "{{" in raw or "{%" in raw:
        return "template expression left opaque"
    if "$(" in raw or "`" in raw:
        return "command substitution"
    array = _ARRAY_WORD.search(raw)
    if array is not None:
        return f"unresolved array ${array.group(1)}[@]"
    if any(token in raw for token in ("$@", "$*", "${@", "${*")):
        return 'script arguments "$@" not known'
    variable = _VARIABLE_WORD.search(raw)
    if variable is not None:
        return f"unresolved variable ${variable.group(1)}"
    return "argument not known"


def _single_unknown(word: Word) -> bool:
    """An argument whose value is unknown but that is exactly one argument ("$MODEL", a list element)."""
    if word.single:
        return True
    raw = word.raw.strip("\"'")
    return raw.startswith("$") and not raw.startswith(("$@", "$*", "${@", "${*")) and "[@]" not in raw and "[*]" not in raw


def parse_serve_args(args: list[Word], table: FlagTable, positional_model: bool) -> ParsedArgs:
    """Settings from the arguments that follow ``vllm serve`` (or the api_server module), each with the
    condition of the word that names it."""
    parsed = _parse_serve_args(args, table, positional_model)
    conditions = parsed.settings.conditions if isinstance(parsed.settings, _Settings) else []
    parsed.settings = list(parsed.settings)
    if any(conditions):
        parsed.conditions = conditions
    return parsed


class _Settings(list[Setting]):
    """The settings read so far, and for each the condition of the word it was read from."""

    def __init__(self) -> None:
        super().__init__()
        self.conditions: list[frozenset] = []
        self.word: Word | None = None

    def append(self, setting: Setting) -> None:
        super().append(setting)
        self.conditions.append(self.word.condition if self.word is not None else frozenset())


def _parse_serve_args(args: list[Word], table: FlagTable, positional_model: bool) -> ParsedArgs:
    return _ServeArgsReader(args, table, positional_model).read()


class _ServeArgsReader:
    """Reads the arguments of ``vllm serve`` one word (or flag and its values) at a time, as vLLM's parser would."""

    def __init__(self, args: list[Word], table: FlagTable, positional_model: bool) -> None:
        self.args, self.table, self.positional_model = args, table, positional_model
        self.settings = _Settings()
        self.opaque = False
        self.reasons: list[str] = []
        self.seen_positional = False
        self.prints_only = False

    def read(self) -> ParsedArgs:
        i = 0
        while i < len(self.args):
            i += self._word(i)
        return ParsedArgs(self.settings, self.opaque, reasons=list(dict.fromkeys(self.reasons)), prints_only=self.prints_only)

    def _word(self, i: int) -> int:
        """Read the word at ``i`` (with the values it takes); how many words that was."""
        word = self.settings.word = self.args[i]
        text = word.value
        if text is None:
            self._unknown_word(word)
            return 1
        if text == "--":
            return 1
        if not text.startswith("-") or _NEGATIVE_NUMBER.match(text) or text == "-":
            if self.positional_model and not self.seen_positional:
                self.seen_positional = True
                self.settings.append(Setting("model", "MODEL", True, Value(text, word.origin), Span(word.start, word.end), Span(word.start, word.end)))
            return 1
        name, eq, inline = text.partition("=")
        if name in _VERSION_OPTIONS:
            self.prints_only = True
            return 1
        flag, candidates = self.table.lookup(normalise(name))
        if flag is None and "." in name:
            return self._dotted_flag(i, name, eq, inline)
        if flag is None:
            return self._unknown_flag(i, name, eq, inline, candidates)
        if flag.kind == "help":
            # vLLM's parser takes ``--help=all`` and ``--help=GROUP`` too (FlexibleArgumentParser.parse_args)
            self.prints_only = True
            return 1
        if flag.is_boolean:
            self._boolean_flag(word, flag, name, eq, inline, candidates)
            return 1
        return self._flag_with_values(i, flag, name, eq, inline)

    def _unknown_word(self, word: Word) -> None:
        """A word whose value is not statically known: a flag set to an unknown value, the model, or arguments
        that cannot be seen (the launch is opaque)."""
        name = _flag_name(word)
        if name is not None:
            # a flag whose value is not statically known: set, value unknown
            flag, candidates = self.table.lookup(normalise(name))
            if flag is not None and flag.kind != "help":
                self.settings.append(Setting(flag.dest, name, True, None, Span(word.start, word.end)))
                if flag.dest == "config":
                    self.opaque = True
                    self.reasons.append("config file (--config)")
            else:
                key = normalise(name).lstrip("-").replace("-", "_")
                suggestions = candidates or self.table.suggest(normalise(name))
                self.settings.append(Setting(key, name, False, None, Span(word.start, word.end), None, suggestions))
            return
        if word.raw.startswith("-"):
            return
        if self.positional_model and not self.seen_positional and _single_unknown(word):
            self.seen_positional = True
            self.settings.append(Setting("model", "MODEL", True, None, Span(word.start, word.end), Span(word.start, word.end)))
            return
        # "$@" / "${ARGS[@]}" / *args: arguments we cannot see
        self.opaque = True
        self.reasons.append(opaque_reason(word))

    def _dotted_flag(self, i: int, spelled: str, eq: str, inline: str) -> int:
        """``--speculative-config.method mtp``: one key of a JSON argument, which vLLM's parser
        (FlexibleArgumentParser) takes in dot notation; the argument is set, its whole value not known here."""
        base = self.table.exact.get(normalise(spelled.split(".", 1)[0]))
        if base is None or base.is_boolean:
            flag, candidates = self.table.lookup(normalise(spelled))
            return self._unknown_flag(i, spelled, eq, inline, candidates)
        word = self.args[i]
        self.settings.append(Setting(base.dest, spelled, True, None, Span(word.start, word.end)))
        following = self.args[i + 1] if i + 1 < len(self.args) else None
        takes_next = not eq and following is not None and not (following.value or following.raw).startswith("-")
        return 2 if takes_next else 1

    def _unknown_flag(self, i: int, spelled: str, eq: str, inline: str, candidates) -> int:
        """A flag vLLM does not have, with the value it seems to take."""
        args, word = self.args, self.args[i]
        value_word: Word | None = None
        value: Value | None = None
        value_span: Span | None = None
        consumed = 1
        if eq:
            value = Value(inline, word.origin)
            value_span = Span(word.end - len(inline), word.end) if word.raw.endswith(inline) else None
        elif i + 1 < len(args) and not (args[i + 1].value or args[i + 1].raw).startswith("-"):
            value_word = args[i + 1]
            consumed = 2
        key = normalise(spelled).lstrip("-").replace("-", "_")
        suggestions = candidates or self.table.suggest(normalise(spelled))
        if value_word is not None:
            value, value_span = _value_of(value_word), Span(value_word.start, value_word.end)
        end = (value_word.end if value_word else word.end)
        self.settings.append(Setting(key, spelled, False, value, Span(word.start, end), value_span, suggestions))
        return consumed

    def _boolean_flag(self, word: Word, flag, spelled: str, eq: str, inline: str, candidates) -> None:
        key = normalise(spelled)
        matched = key if key in self.table.exact else (candidates[0] if candidates else key)
        negative = matched.startswith("--no-")
        if eq:
            value = Value(inline, word.origin)
        else:
            value = Value(not negative, None)
        self.settings.append(Setting(flag.dest, spelled, True, value, Span(word.start, word.end)))

    def _flag_with_values(self, i: int, flag, spelled: str, eq: str, inline: str) -> int:
        """A flag that takes values: inline (``--x=1``) or the words after it (several for ``nargs="+"``)."""
        args, word = self.args, self.args[i]
        value: Value | None = None
        value_span: Span | None = None
        consumed = 1
        values: list[Word] = []
        if eq:
            value = Value(inline, word.origin) if word.value is not None else None
            value_span = Span(word.end - len(inline), word.end) if word.raw.endswith(inline) else Span(word.start, word.end)
        else:
            many = flag.nargs in ("+", "*")
            j = i + 1
            while j < len(args):
                candidate = args[j]
                probe = candidate.value if candidate.value is not None else candidate.raw
                if probe.startswith("-") and not _NEGATIVE_NUMBER.match(probe) and values:
                    break
                if probe.startswith("--") and not values:
                    break
                values.append(candidate)
                j += 1
                if not many:
                    break
            consumed = 1 + len(values)
            if values:
                first = values[0]
                texts = [v.value for v in values if v.value is not None]
                value = _value_of(first) if len(values) == 1 else (
                    Value(" ".join(texts), first.origin) if len(texts) == len(values) else None
                )
                value_span = Span(first.start, values[-1].end)
        if flag.dest == "config":
            self.opaque = True
            self.reasons.append("config file (--config)")
        bad_choice = None
        if value is not None:
            converted = convert_value(flag.dest, str(value.value))
            value = Value(converted, value.origin)
            bad_choice = invalid_value(flag, value.value)
        end = value_span.end if value_span is not None else word.end
        self.settings.append(
            Setting(flag.dest, spelled, True, value, Span(word.start, end), value_span, bad_choice=bad_choice)
        )
        return consumed
