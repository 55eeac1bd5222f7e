"""Procfiles (Heroku, foreman, honcho, Dokku): each ``name: command`` line's command, read as shell."""

from __future__ import annotations


from vllm_lint.lazy_re import lazy_compile

_PROCESS = lazy_compile(r"^[ \t]*[A-Za-z0-9_.-]+[ \t]*:[ \t]*")


def claims(name: str, head: bytes) -> bool:
    return name == "Procfile" or name.startswith("Procfile.")


def procfile_view(text: str):
    from vllm_lint.cmdline.shell import Environment
    from vllm_lint.surfaces.embedded import LineView, View

    view = View.empty(text)
    for index, line in enumerate(text.split("\n")):
        process = _PROCESS.match(line)
        if process is not None and not line.lstrip().startswith("#"):
            view.put(index, LineView(line).blank(0, process.end()).copy(process.end(), len(line)))
    return view, Environment()


def clue(data: bytes) -> bool:
    """What the file's bytes hold when it can run anything (vLLM named is checked apart)."""
    return b":" in data
