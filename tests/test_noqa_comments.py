"""Every finding of every rule example, on every kind of file, can be disabled for its line: the comment
``engine/noqa_comments`` writes (the editor's "disable for this line", ``check --add-noqa``) silences it and
nothing else, and leaves the file readable."""

from __future__ import annotations

import pytest

from lintutil import example_in_process, run_cli
from vllm_lint.engine.fixer import add_noqa_bytes
from vllm_lint.registry import project_codes
from vllm_lint.rulebook import PARSE_ERROR_CODE, load_rules

CASES = [
    pytest.param(rule, example, id=f"{rule.code}-{index}")
    for rule in load_rules().values()
    if rule.code != PARSE_ERROR_CODE
    for index, example in enumerate(rule.examples)
    if example.kind == "bad"
]


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_each_finding_of_each_bad_example_can_be_disabled_for_its_line(tmp_path, rule, example):
    """The comments ``--add-noqa`` writes, one per finding, each kept only when the file re-lints with that
    finding gone and nothing new: every finding of the example gets one."""
    path, surface, options = example_in_process(tmp_path, example)
    outcome = add_noqa_bytes(path, path.read_bytes(), surface, options)
    # (a rule decided across files, VLL304, reports after the run: a file's own lint has none of it to disable)
    assert outcome.applied or rule.code in project_codes(), f"{surface.name}: no finding to disable"
    assert outcome.remaining == [], f"{surface.name}: no comment disables these:\n{outcome.fixed.decode()}"


def test_add_noqa_records_every_finding_then_the_run_is_clean(tmp_path):
    files = {
        "app.py": 'from vllm import LLM\nllm = LLM(model="m", gpu_memory_utilization=0.99)\n',
        "Dockerfile": 'FROM vllm/vllm-openai:latest\nCMD ["m", "--gpu-memory-utilization", "0.99", "--max-model-len", "8192"]\n',
        "serve.sh": "#!/bin/sh\nvllm serve m \\\n  --gpu-memory-utilization 0.99 \\\n  --max-model-len 8192\n",
        "README.md": "# Serving\n\n```bash\nvllm serve m --max-model-len 8192\n```\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    added = run_cli("check", "--add-noqa", "--no-cache", ".", cwd=tmp_path)
    assert (added.returncode, added.stdout, added.stderr) == (0, "Added 9 noqa directives.\n", "")
    assert {name: (tmp_path / name).read_text(encoding="utf-8") for name in files} == {
        "app.py": 'from vllm import LLM\nllm = LLM(model="m", gpu_memory_utilization=0.99)  # noqa: VLL203, VLL202\n',
        "Dockerfile": (
            "# noqa: VLL405\nFROM vllm/vllm-openai:latest\n"
            '# noqa: VLL403, VLL202\nCMD ["m", "--gpu-memory-utilization", "0.99", "--max-model-len", "8192"]\n'
        ),
        "serve.sh": "#!/bin/sh\nvllm serve m \\\n  --gpu-memory-utilization 0.99 \\\n  --max-model-len 8192  # noqa: VLL403, VLL202\n",
        "README.md": "# Serving\n\n<!-- noqa: VLL201, VLL403 -->\n```bash\nvllm serve m --max-model-len 8192\n```\n",
    }
    again = run_cli("check", "--no-cache", ".", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "All checks passed!\n")
