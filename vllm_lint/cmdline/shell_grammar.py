"""Shell read on tree-sitter-bash, a maintained bash grammar: the judge of what bash accepts, and the reader
of every script a file holds (a shell script, a Dockerfile's RUN/CMD/ENTRYPOINT shell form, an ``sh -c``
string in compose, Kubernetes or Python, a notebook's ``!`` line or ``%%bash`` cell, SkyPilot's ``run:``, a
Markdown fence).

The grammar decides the structure (commands, lists, pipelines, blocks, here-documents, arrays) and where
each word is; each word's own text is then read by ``shell.py``'s word reader, so values, ``${VAR:-d}``,
``${VAR:+...}``, arrays and ``"$@"`` expand as the static expansion says. ``shell.tokenize`` reads a script
only where the grammar is not installed or finds an error. The grammar is imported on the first script
read; the pre-filter keeps files without a vLLM word from being read at all.
"""

from __future__ import annotations

from functools import lru_cache

from vllm_lint.cmdline.shell import (
    _ARRAY_ASSIGNMENT,
    Command,
    Heredoc,
    ShellSyntaxError,
    Word,
    _alternative_words,
    _read_word,
    tokenize,
)

# argument nodes: one shell word each (a concatenation is one word made of several pieces)
_WORD_NODES = frozenset({
    "word", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation", "simple_expansion",
    "expansion", "command_substitution", "process_substitution", "number", "arithmetic_expansion",
})
_BLOCKS = frozenset({"if_statement", "while_statement", "for_statement", "c_style_for_statement", "case_statement"})


@lru_cache(maxsize=1)
def _parser():
    try:
        import tree_sitter
        import tree_sitter_bash
    except ImportError:  # an install without the grammar: the tokenizer's reading stands
        return None
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def bash_accepts(text: str) -> bool | None:
    """Whether bash's grammar parses ``text`` without an error; None when the grammar is not installed."""
    parser = _parser()
    if parser is None:
        return None
    return not parser.parse(text.encode("utf-8")).root_node.has_error


def read_commands(text: str, base: int = 0) -> list[Command]:
    """The commands of a script as bash's grammar splits them; ``shell.tokenize``'s where the grammar is not
    installed or finds an error (raising its ShellSyntaxError then, so that the error said is a precise one)."""
    commands = tokenize_with_grammar(text, base)
    return commands if commands is not None else tokenize(text, base)


def tokenize_with_grammar(text: str, base: int = 0) -> list[Command] | None:
    """``shell.tokenize``'s commands, split by the grammar; None when the grammar is not installed or finds
    an error (the tokenizer's error then stands)."""
    parser = _parser()
    if parser is None:
        return None
    data = text.encode("utf-8")
    root = parser.parse(data).root_node
    if root.has_error:
        return None
    reader = _Reader(text, data, base)
    reader.visit(root, frozenset())
    return reader.commands


class _Reader:
    def __init__(self, text: str, data: bytes, base: int) -> None:
        self.text = text
        self.base = base
        self.commands: list[Command] = []
        # tree-sitter counts bytes; words are placed by character
        self.char_at = None if len(data) == len(text) else _char_offsets(text)

    def offset(self, byte: int) -> int:
        return byte if self.char_at is None else self.char_at[byte]

    def source(self, node) -> tuple[str, int]:
        start, end = self.offset(node.start_byte), self.offset(node.end_byte)
        return self.text[start:end], start

    def visit(self, node, condition: frozenset) -> None:
        kind = node.type
        if kind in ("comment", "heredoc_body"):
            return
        if kind in ("command", "declaration_command", "unset_command"):
            self.command(node, condition)
            return
        if kind == "variable_assignment" or kind == "variable_assignments":
            self.assignments(node, condition)
            return
        if kind == "redirected_statement":
            self.redirected(node, condition)
            return
        if kind == "list":
            self.and_or(node, condition)
            return
        if kind in _BLOCKS:
            condition = condition | {("shell-block", self.base + self.offset(node.start_byte))}
        if kind == "test_command":
            return  # `[[ ... ]]` runs nothing
        # an ``if``'s tests that a variable is not empty hold in its ``then`` body
        tests = node.children_by_field_name("condition") if kind == "if_statement" else []
        tested = frozenset().union(*(_tested_nonempty(test) for test in tests))
        for child in node.named_children:
            before = len(self.commands)
            self.visit(child, condition)
            if tested and child.type not in ("elif_clause", "else_clause") and child not in tests:
                _mark_nonempty(self.commands[before:], tested)

    def and_or(self, node, condition: frozenset) -> None:
        """``a && b || c``: what follows an operator runs under a condition of its own."""
        after = condition
        tested: frozenset[str] = frozenset()
        last = None
        for child in node.children:
            if child.type in ("&&", "||"):
                after = condition | {("shell-and-or", self.base + self.offset(child.start_byte))}
                tested = _tested_nonempty(last) if child.type == "&&" else frozenset()
                continue
            if child.is_named:
                before = len(self.commands)
                self.visit(child, after)
                if tested:
                    _mark_nonempty(self.commands[before:], tested)
                last = child

    def redirected(self, node, condition: frozenset) -> None:
        body = node.child_by_field_name("body")
        before = len(self.commands)
        if body is not None:
            self.visit(body, condition)
        owner = self.commands[before] if len(self.commands) > before else None
        if owner is not None and body is not None and body.type == "command":
            # the grammar takes every word after `> file` as the redirect's; bash takes the first (``cmd > log
            # --flag`` runs ``cmd --flag``)
            for child in node.named_children:
                if child.type == "file_redirect":
                    for extra in child.children_by_field_name("destination")[1:]:
                        owner.words.extend(self.words_of(extra))
        written = self.written_to(node)
        for child in node.named_children:
            if child.type != "heredoc_redirect" or owner is None:
                continue
            start = next((c for c in child.named_children if c.type == "heredoc_start"), None)
            body_node = next((c for c in child.named_children if c.type == "heredoc_body"), None)
            if body_node is None:
                continue
            delimiter = self.source(start)[0] if start is not None else ""
            quoted = any(mark in delimiter for mark in "'\"\\")
            owner.heredoc = True
            heredoc = Heredoc(self.base + self.offset(body_node.start_byte), self.base + self.offset(body_node.end_byte), quoted,
                              written or self.written_to(child))
            heredoc.strip_tabs = any(not c.is_named and self.source(c)[0] == "<<-" for c in child.children)
            owner.heredocs.append(heredoc)
            for nested in child.named_children:
                if nested.type not in ("heredoc_start", "heredoc_body", "heredoc_end", "file_redirect"):
                    before_nested = len(self.commands)
                    self.visit(nested, condition)  # a pipeline after <<EOF (cat <<EOF | bash)
                    if heredoc.piped_to is None and len(self.commands) > before_nested:
                        heredoc.piped_to = self.commands[before_nested].words

    def written_to(self, node) -> str | None:
        """The file the first ``>``/``>>`` redirect among ``node``'s children writes (its text as written)."""
        for child in node.named_children:
            if child.type != "file_redirect":
                continue
            operator = next((c for c in child.children if not c.is_named), None)
            destination = child.child_by_field_name("destination")
            if operator is not None and destination is not None and self.source(operator)[0] in (">", ">>", ">|"):
                return self.source(destination)[0]
        return None

    def command(self, node, condition: frozenset) -> None:
        words: list[Word] = []
        for child in node.named_children:
            kind = child.type
            if kind in ("file_redirect", "herestring_redirect", "heredoc_redirect", "comment"):
                continue
            if kind == "command_name":
                child = child.named_children[0] if child.named_children else child
            if kind in ("variable_assignment",):
                words.append(self.assignment_word(child))
                continue
            if kind == "concatenation" or kind in _WORD_NODES or kind == "command_name":
                words.extend(self.words_of(child))
                continue
            if kind == "subshell" or kind == "command_substitution":
                self.visit(child, condition)
        if node.type == "declaration_command":
            head = node.children[0] if node.children else None
            if head is not None and not head.is_named:
                text, start = self.source(head)
                words.insert(0, Word(text, self.base + start, self.base + start + len(text), [("lit", text)]))
        if words:
            self.commands.append(Command(words, condition=condition))

    def assignments(self, node, condition: frozenset) -> None:
        nodes = [node] if node.type == "variable_assignment" else [c for c in node.named_children if c.type == "variable_assignment"]
        words = [self.assignment_word(child) for child in nodes]
        if words:
            self.commands.append(Command(words, condition=condition))

    def assignment_word(self, node) -> Word:
        text, start = self.source(node)
        value = node.child_by_field_name("value")
        if value is not None and value.type == "array":
            name_end = self.offset(value.start_byte) - start
            word = Word(text, self.base + start, self.base + start + len(text), [("unknown",)])
            word.array = [w for element in value.named_children if element.type != "comment" for w in self.words_of(element)]
            if not _ARRAY_ASSIGNMENT.fullmatch(text[:name_end]):
                word.array = None
            return word
        return self.word_at(text, start)

    def words_of(self, node) -> list[Word]:
        text, start = self.source(node)
        word = self.word_at(text, start)
        return _alternative_words(word) or [word]

    def word_at(self, text: str, start: int) -> Word:
        try:
            word, _ = _read_word(text, 0, self.base + start)
        except ShellSyntaxError:
            word = Word(text, self.base + start, self.base + start + len(text), [("unknown",)])
        # the word reader stops at what the grammar already decided is inside the word (a `(` in a regex)
        if word.end - word.start != len(text):
            word = Word(text, self.base + start, self.base + start + len(text), [("unknown",)])
        return word


def _char_offsets(text: str) -> list[int]:
    """For each byte offset of ``text`` in UTF-8 (and the end), the character offset it falls in."""
    offsets: list[int] = []
    for index, char in enumerate(text):
        offsets.extend([index] * len(char.encode("utf-8")))
    offsets.append(len(text))
    return offsets


def _tested_nonempty(node) -> frozenset[str]:
    """The variables a test says are not empty when it passes: ``[ -n "$X" ]``, ``[[ ! -z $X ]]``,
    ``[ "$X" != "" ]``, ``test -n "$X"``, and those of both sides of ``&&``."""
    if node is None:
        return frozenset()
    kind = node.type
    if kind in ("test_command", "parenthesized_expression"):
        return frozenset().union(*(_tested_nonempty(child) for child in node.named_children))
    if kind == "list" or (kind == "binary_expression" and _operator(node) == "&&"):
        return frozenset().union(*(_tested_nonempty(child) for child in node.named_children))
    if kind == "unary_expression":
        operator, operand = _operator(node), node.named_children[-1] if node.named_children else None
        if operator == "-n":
            return _variable(operand)
        if operator == "!" and operand is not None and operand.type == "unary_expression" and _operator(operand) == "-z":
            return _variable(operand.named_children[-1])
        return frozenset()
    if kind == "binary_expression" and _operator(node) == "!=":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if right is not None and right.text in (b'""', b"''"):
            return _variable(left)
        if left is not None and left.text in (b'""', b"''"):
            return _variable(right)
        return frozenset()
    if kind == "command":
        words = [child.text for child in node.named_children]
        if len(words) == 3 and words[0] == b"test" and words[1] == b"-n":
            return _variable(node.named_children[2])
    return frozenset()


def _operator(node) -> str | None:
    found = node.child_by_field_name("operator")
    return found.text.decode("utf-8", "replace") if found is not None else None


def _variable(node) -> frozenset[str]:
    """The variable a test operand is exactly (``$X``, ``"$X"``, ``"${X}"``), or none."""
    while node is not None and node.type == "string" and len(node.named_children) == 1:
        node = node.named_children[0]
    if node is None or node.type not in ("simple_expansion", "expansion"):
        return frozenset()
    names = [child for child in node.named_children if child.type == "variable_name"]
    if len(names) != 1 or len(node.named_children) != 1:
        return frozenset()
    return frozenset({names[0].text.decode("utf-8", "replace")})


def _mark_nonempty(commands: list[Command], names: frozenset[str]) -> None:
    for command in commands:
        for word in command.words:
            word.nonempty = word.nonempty | names
            for element in word.array or ():
                element.nonempty = element.nonempty | names
