"""A demo under ``if __name__ == "__main__":`` that calls a helper the rewrite makes async (rewrite/script.py):
it runs in the app's lifespan handler, in ``asyncio.run``; a demo that serves, or binds names read outside
it, is refused with the reason."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vllm_lint.config import Settings
from vllm_lint.engine.fixer import fix_file
from vllm_lint.python.rewrite.offload import THREAD_LOCK_TITLE

from lintutil import fixed_server, lint_text

SERVER = """\
from fastapi import FastAPI
from transformers import AutoModelForCausalLM, AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained("gpt2")
model = AutoModelForCausalLM.from_pretrained("gpt2")
app = FastAPI()

def complete(prompt: str) -> str:
    inputs = tokenizer(prompt, return_tensors="pt")
    return tokenizer.decode(model.generate(**inputs, max_new_tokens=8)[0])

@app.post("/g")
def g(prompt: str):
    return {"text": complete(prompt)}
"""


def _fixed(tmp_path: Path, source: str) -> str:
    return fixed_server(tmp_path, source, {"VLL102": 1})


def test_a_demo_awaits_the_helper_in_the_lifespan_handler(tmp_path):
    source = SERVER + '\nif __name__ == "__main__":\n    print(complete("hello").upper())\n    for word in ("a", "b"):\n        print(complete(word))\n'
    result = _fixed(tmp_path, source)
    assert result.endswith(
        'if __name__ == "__main__":\n'
        "    async def main():\n"
        "        async with lifespan(app):\n"
        '            print((await complete("hello")).upper())\n'
        '            for word in ("a", "b"):\n'
        "                print(await complete(word))\n"
        "\n"
        "    asyncio.run(main())\n"
    ), result
    assert "import asyncio\n" in result, result
    compile(result, "server.py", "exec")
    assert [d for d in lint_text(tmp_path, "again.py", result) if d.code.startswith("VLL1")] == []
    again = tmp_path / "again.py"
    again.write_text(result)
    assert fix_file(again, settings=Settings(root=tmp_path)).fixed.decode() == result


REFUSED = {
    "a demo that also serves the app": (
        SERVER + 'if __name__ == "__main__":\n    import uvicorn\n    print(complete("hello"))\n    uvicorn.run(app)\n',
        "also starts a server (`uvicorn.run(app)`), which cannot run inside the event loop the demo's awaits need",
    ),
    "a demo binding a name a function reads": (
        SERVER + 'def shown():\n    return greeting\nif __name__ == "__main__":\n    greeting = complete("hello")\n    print(shown())\n',
        "binds `greeting`, which `return greeting` reads outside it; as the demo runs in a function, it would bind a local instead",
    ),
    "a demo calling the helper in a comprehension": (
        SERVER + 'if __name__ == "__main__":\n    print([complete(word) for word in ("a", "b")])\n',
        "complete() is also called under `if __name__ == \"__main__\":`",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_demos_that_cannot_run_in_the_lifespan_handler_are_refused(tmp_path, case):
    source, reason = REFUSED[case]
    [finding] = [d for d in lint_text(tmp_path, "server.py", textwrap.dedent(source)) if d.code == "VLL102"]
    # no engine rewrite; a `def` route FastAPI runs in worker threads gets the lock fallback instead
    assert (finding.fix is None or finding.fix.message == THREAD_LOCK_TITLE) and reason in finding.message, finding.message

