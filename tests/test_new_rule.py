"""CONTRIBUTING.md's way of adding a rule, followed in a copy of the repository: its ``scripts/new_rule.py``
commands (with codes free at the time of the run, never codes a contributor may pick), the skeleton filled in as
its steps say, then its test command, which must pass. When the guide or the script drifts, this fails."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_lint import __version__
from vllm_lint.rulebook import all_codes

from lintutil import REPO

_COPIED = ("vllm_lint", "rules", "examples", "scripts", "tests", "README.md", "pyproject.toml", "CONTRIBUTING.md")
GUIDE = REPO / "CONTRIBUTING.md"


def free_code(hundreds: str, taken: set[str] | None = None) -> str:
    """The first code of a group (``"2"``: VLL2nn) that no rule file has."""
    used = set(all_codes()) | (taken or set())
    return next(code for n in range(1, 100) if (code := f"VLL{hundreds}{n:02d}") not in used)


def guide_commands(prefix: str) -> list[list[str]]:
    """The command lines of CONTRIBUTING.md's code blocks that start with ``prefix``, as words."""
    blocks = re.findall(r"^ *```bash\n(.*?)^ *```", GUIDE.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith(prefix)]


def _run(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    # The copy's own package, not the installed one.
    env = {**os.environ, "PYTHONPATH": str(repo)}
    return subprocess.run([sys.executable, *args], cwd=repo, env=env, capture_output=True, text=True, check=check)


def _new_rule(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return _run(repo, str(repo / "scripts" / "new_rule.py"), *args, check=False)


def _copy(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("new-rule") / "repo"
    for name in _COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, repo / name)
    (repo.parent / "shared").symlink_to(REPO.parent / "shared")  # what the tests read beside the repository
    return repo


# -- the guide's two rules, filled in as its steps say ---------------------------------------------------------
# Step 2 (the YAML's texts and examples, after the lines the script wrote) and step 3 (the checker's TODO lines),
# by the rule's name in the guide's command.
_FILLED_YAML = {
    "max-num-seqs-too-high": """\
summary: A vLLM engine is launched with `max_num_seqs` above 1024.
why: >
  Each running sequence holds KV cache blocks; past about a thousand the scheduler preempts and recomputes
  sequences instead of serving them, and latency grows for every request.
fix: {safety: none}
directive: Keep `max_num_seqs` / `--max-num-seqs` at 1024 or below; raise throughput with more replicas.
examples:
  - lang: bash
    bad: |
      vllm serve m --max-model-len 8192 --max-num-seqs 4096 --host 127.0.0.1  # expect: CODE
  - lang: python
    bad: |
      from vllm import LLM
      llm = LLM(model="m", max_model_len=8192, max_num_seqs=4096)  # expect: CODE
  - lang: ipynb
    bad: |
      # %%
      !vllm serve m --max-model-len 8192 --max-num-seqs 4096 --host 127.0.0.1  # expect: CODE
  - lang: helm
    files:
      Chart.yaml: |
        apiVersion: v2
        name: llm
        version: 0.1.0
      values.yaml: |
        model: m
    bad: |
      apiVersion: apps/v1
      kind: Deployment
      spec:
        template:
          spec:
            containers:
              - name: vllm
                image: vllm/vllm-openai:v0.32.0
                command: ["vllm", "serve", "{{ .Values.model }}"]
                args: ["--max-model-len", "8192", "--max-num-seqs", "4096", "--host", "127.0.0.1"]  # expect: CODE
  - lang: skypilot
    bad: |
      resources:
        accelerators: L4:1
      run: vllm serve m --max-model-len 8192 --max-num-seqs 4096 --host 127.0.0.1  # expect: CODE
  - lang: bash
    good: |
      vllm serve m --max-model-len 8192 --max-num-seqs 256 --host 127.0.0.1
""",
    "constant-seed": """\
summary: "`SamplingParams(seed=...)` with a constant in code that builds each request's parameters."
why: >
  Every request then draws the same random stream: sampled answers repeat across users.
fix: {safety: none}
directive: Leave `seed` unset for served requests, or derive it from the request.
examples:
  - lang: python
    bad: |
      from vllm import SamplingParams
      params = SamplingParams(max_tokens=64, seed=0)  # expect: CODE
  - lang: ipynb
    bad: |
      # %%
      from vllm import SamplingParams
      # %%
      params = SamplingParams(max_tokens=64, seed=1234)  # expect: CODE
  - lang: python
    good: |
      from vllm import SamplingParams
      def params_for(request_seed: int) -> SamplingParams:
          return SamplingParams(max_tokens=64, seed=request_seed)
""",
}
_FILLED_CHECKER = {
    "max-num-seqs-too-high": {
        '    setting = launch.get("TODO_engine_argument")\n    if setting is None:\n        return\n':
            '    setting = launch.get("max_num_seqs")\n    number = as_float(setting.value) if setting is not None else None\n'
            '    if setting is None or number is None or number <= 1024:\n        return\n',
        "from vllm_lint.values import as_bool, as_float\n": "from vllm_lint.values import as_bool, as_float\n",
    },
    "constant-seed": {
        '        if ctx.semantics.callee(site.node) != "TODO.the.callee":\n            continue\n':
            '        seed = keyword_arg(site.node, "seed")\n'
            '        if ctx.semantics.callee(site.node) != "vllm.SamplingParams" or seed is None:\n            continue\n'
            "        if not isinstance(seed.value, cst.Integer):\n            continue\n",
    },
}
_MESSAGE = '"TODO what is wrong: its consequence; what to do instead"'


def _fill(repo: Path, code: str, name: str, checker: Path) -> None:
    rule_file = repo / "rules" / f"{code}.yaml"
    written = rule_file.read_text(encoding="utf-8")
    head = written[: written.index("summary: ")]
    assert "preview: true\n" in head, "a new rule starts in preview"
    rule_file.write_text(head + _FILLED_YAML[name].replace("CODE", code), encoding="utf-8")
    source = checker.read_text(encoding="utf-8")
    for old, new in {**_FILLED_CHECKER[name], _MESSAGE: f'"{name.replace("-", " ")}: see `vllm-lint rule {code}`"'}.items():
        assert source.count(old) >= 1, f"{checker.name}: the skeleton no longer has {old!r}"
        source = source.replace(old, new)
    checker.write_text(source, encoding="utf-8")


@pytest.fixture(scope="module")
def guide_rules(tmp_path_factory) -> tuple[Path, list[tuple[str, list[str]]]]:
    """A copy where CONTRIBUTING's new_rule.py commands ran, with free codes of the same groups: (copy, [(code, args)])."""
    repo = _copy(tmp_path_factory)
    commands = guide_commands("python scripts/new_rule.py")
    assert [words[3] for words in commands] == ["constant-seed", "max-num-seqs-too-high"], "the guide's examples changed"
    ran, taken = [], set()
    for words in commands:
        code = free_code(words[2][3], taken)
        taken.add(code)
        args = [code, *words[3:]]
        result = _new_rule(repo, *args)
        assert result.returncode == 0 and result.stderr == "", result.stdout + result.stderr
        ran.append((code, args))
    return repo, ran


def test_the_files_it_writes(guide_rules):
    repo, ran = guide_rules
    changed = subprocess.run(["diff", "-rq", "-x", "__pycache__", str(REPO), str(repo)], capture_output=True, text=True).stdout
    lines = sorted(line.replace(str(repo), "COPY").replace(str(REPO), "REPO") for line in changed.splitlines())
    (seed, _), (seqs, _) = ran
    assert [line for line in lines if not line.startswith("Only in REPO")] == sorted([
        "Files REPO/README.md and COPY/README.md differ",
        "Files REPO/vllm_lint/launch/rules/engine.py and COPY/vllm_lint/launch/rules/engine.py differ",
        "Files REPO/vllm_lint/launch/rules/engine_prefilter.py and COPY/vllm_lint/launch/rules/engine_prefilter.py differ",
        "Files REPO/vllm_lint/python/rules/sampling.py and COPY/vllm_lint/python/rules/sampling.py differ",
        "Files REPO/vllm_lint/python/rules/sampling_prefilter.py and COPY/vllm_lint/python/rules/sampling_prefilter.py differ",
        f"Only in COPY/docs/rules: {seed}.md",
        f"Only in COPY/docs/rules: {seqs}.md",
        f"Only in COPY/examples: {seed.lower()}_constant_seed.py",
        f"Only in COPY/examples: {seqs.lower()}_max_num_seqs_too_high.sh",
        f"Only in COPY/rules: {seed}.yaml",
        f"Only in COPY/rules: {seqs}.yaml",
    ])
    declarations = (repo / "vllm_lint/python/rules/sampling_prefilter.py").read_text(encoding="utf-8")
    assert declarations.endswith(f'    "{seed}": (contains(b"seed"),),\n}}\n')
    # The surfaces its family reads (every neighbour lists them), each with the bad example the catalogue asks for.
    import yaml

    launch_rule = yaml.safe_load((repo / "rules" / f"{seqs}.yaml").read_text(encoding="utf-8"))
    neighbour = yaml.safe_load((REPO / "rules" / "VLL203.yaml").read_text(encoding="utf-8"))
    assert launch_rule["surfaces"] == neighbour["surfaces"]
    assert [e["lang"] for e in launch_rule["examples"]] == ["bash", "python", "ipynb", "helm", "skypilot", "bash"]
    major, minor = __version__.split(".")[:2]
    assert (launch_rule["preview"], launch_rule["since"]) == (True, f"{major}.{int(minor) + 1}.0")


@pytest.mark.slow
def test_the_skeleton_fails_on_its_bad_examples_until_filled_in(guide_rules):
    # Before step 3 the checker reports nothing: the rule's examples fail, and nothing else does.
    repo, ran = guide_rules
    for code, _ in ran:
        result = _run(repo, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rule", code, check=False)
        failed = {line.split("::")[0].removeprefix("FAILED ") for line in result.stdout.splitlines() if line.startswith("FAILED")}
        assert failed == {"tests/test_rule_examples.py"}, result.stdout[-3000:]


@pytest.mark.slow
def test_the_guide_s_rules_filled_in_pass_the_guide_s_test_command(guide_rules, tmp_path_factory):
    # A copy of its own: the skeleton test above reads the unfilled one.
    repo = _copy(tmp_path_factory)
    [test_command] = guide_commands("python -m pytest -q --rule")
    for code, args in guide_rules[1]:
        assert _new_rule(repo, *args).returncode == 0
        family = args[args.index("--family") + 1]
        checker = repo / "vllm_lint" / ("launch" if "--launch" in args else "python") / "rules" / f"{family}.py"
        _fill(repo, code, args[1], checker)
        assert _run(repo, "scripts/generate_docs.py").returncode == 0  # step 5: the summary and first example changed
        words = [word.replace("VLLnnn", code) for word in test_command]
        result = _run(repo, "-m", *words[2:], "-p", "no:cacheprovider", check=False)
        assert result.returncode == 0, result.stdout[-4000:]
        assert re.search(r"\d+ passed", result.stdout) and "failed" not in result.stdout
        # Preview: off by default, on with --preview.
        example = repo / "examples" / next(p.name for p in (repo / "examples").iterdir() if p.name.startswith(code.lower()))
        plain = _run(repo, "-m", "vllm_lint", "check", "--isolated", "--select", code, str(example), check=False)
        preview = _run(repo, "-m", "vllm_lint", "check", "--isolated", "--preview", "--select", code, str(example), check=False)
        assert (plain.returncode, preview.returncode) == (0, 1), plain.stdout + preview.stdout
        assert f" {code} " in preview.stdout


def test_the_registry_sees_the_new_rules(guide_rules):
    import yaml

    repo, ran = guide_rules
    (seed, _), (seqs, _) = ran
    code = (
        "import json, sys\n"
        "from vllm_lint import registry\n"
        "print(json.dumps([registry.consistency_problems(),"
        " {c: [k.where for k in registry.implementations(c)] for c in sys.argv[1:]},"
        " sorted(registry.launch_codes())]))\n"
    )
    problems, implementations, launch_codes = json.loads(_run(repo, "-c", code, seed, seqs).stdout)
    assert problems == []
    assert implementations == {
        seed: ["vllm_lint.python.rules.sampling:constant_seed"],
        seqs: ["vllm_lint.launch.rules.engine:max_num_seqs_too_high"],
    }
    assert seqs in launch_codes and seed not in launch_codes
    page = _run(repo, "-m", "vllm_lint", "rule", seqs).stdout
    assert "Implemented in: `vllm_lint.launch.rules.engine:max_num_seqs_too_high`" in page.splitlines()
    since = yaml.safe_load((repo / "rules" / f"{seqs}.yaml").read_text(encoding="utf-8"))["since"]
    assert f"Preview since {since}: it runs only with preview on: `--preview`, or `preview = true` in the configuration." in page


def test_a_new_family_is_created(tmp_path_factory):
    repo = _copy(tmp_path_factory)
    code = free_code("6")
    result = _new_rule(repo, code, "streamlit-model-load", "--family", "dashboards", "--needs", "streamlit")
    assert result.returncode == 0 and result.stderr == "", result.stdout + result.stderr
    checkers = (repo / "vllm_lint/python/rules/dashboards.py").read_text(encoding="utf-8")
    assert f'@python_rule("{code}")\ndef streamlit_model_load(ctx: PyContext) -> Iterator[PyFinding]:' in checkers
    declarations = (repo / "vllm_lint/python/rules/dashboards_prefilter.py").read_text(encoding="utf-8")
    assert declarations.endswith(f'PREFILTER = {{\n    "{code}": (contains(b"streamlit"),),\n}}\n')
    problems = _run(repo, "-c", "from vllm_lint import registry; print(registry.consistency_problems())").stdout
    assert problems == "[]\n"


def test_what_it_refuses(tmp_path_factory):
    repo = _copy(tmp_path_factory)
    taken: set[str] = set()
    free = [taken.add(code) or code for code in (free_code("9", taken) for _ in range(4))]
    existing = all_codes()[1]
    cases = {
        (existing, "again", "--family", "serving", "--needs", "x"): f"{repo / 'rules' / existing}.yaml exists",
        (free[0], "no-words", "--family", "serving"):
            "a Python rule needs --needs WORD: a word every file it can report contains",
        (free[1], "Bad_Name", "--family", "serving", "--needs", "x"): "Bad_Name: a name is lower-case words joined by hyphens",
        (free[2], "fine", "--family", "serving_prefilter", "--needs", "x"): "serving_prefilter: a family is a module name",
        (free[3], "sync-pipeline-in-handler", "--family", "serving", "--needs", "x"):
            f"{repo / 'vllm_lint/python/rules/serving.py'} already defines sync_pipeline_in_handler",
        ("VLL12", "short", "--family", "serving", "--needs", "x"): "VLL12: a code is VLL and three digits",
    }
    for args, message in cases.items():
        result = _new_rule(repo, *args)
        assert (result.returncode, result.stderr) == (2, f"new_rule: {message}\n"), args
    assert not (repo / "rules" / f"{free[0]}.yaml").exists()
