"""Nothing the user wrote is executed: files that leave a marker when imported, run, built or loaded are
linted, fixed (``--fix --unsafe-fixes``) and given agent rules (``init``), and no marker appears.

Modules named like vllm-lint's own lazily imported dependencies (``libcst.py``, ``yaml.py``, ...) sit in the
working folder too: the ``vllm-lint`` console script does not put the working folder on ``sys.path``.
(``python -m vllm_lint`` does, as ``python -m`` always does; docs/robustness.md says to use ``-P`` then.)
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .conftest import assert_no_traceback, cli_env, run_vllm_lint, vllm_lint_command

LLM_CALL = "from vllm import LLM\nllm = LLM(model='m', gpu_memory_utilization=0.98)\n"


def _python_marker(markers: Path, name: str) -> str:
    return f"open({str(markers / name)!r}, 'w').write('ran')\n"


def _hostile_tree(root: Path, markers: Path) -> list[str]:
    """Files that each write ``markers/<name>`` if anything executes them; returns the marker names."""
    def py(name: str) -> str:
        return _python_marker(markers, name)

    files = {
        "server.py": py("server.py") + "import os\nos.system('touch " + str(markers / "server.py-system") + "')\n" + LLM_CALL,
        "conftest.py": py("conftest.py") + LLM_CALL,
        "setup.py": py("setup.py") + "from setuptools import setup\nsetup(name='x')\n" + LLM_CALL,
        "sitecustomize.py": py("sitecustomize.py") + LLM_CALL,
        "usercustomize.py": py("usercustomize.py") + LLM_CALL,
        "__main__.py": py("__main__.py") + LLM_CALL,
        "pkg/__init__.py": py("pkg-__init__.py") + LLM_CALL,
        "evil.pth": "import os; os.system('touch " + str(markers / "evil.pth") + "')\n",
        # Shadows of what vllm-lint imports lazily; only a working folder on sys.path would load them.
        "libcst.py": py("libcst.py"),
        "yaml.py": py("yaml.py"),
        "pathspec.py": py("pathspec.py"),
        "ahocorasick_rs.py": py("ahocorasick_rs.py"),
        "jinja2.py": py("jinja2.py"),
        "tomllib.py": py("tomllib.py"),
        "vllm.py": py("vllm.py"),
        "run.sh": "#!/bin/sh\ntouch " + str(markers / "run.sh") + "\npython -m vllm.entrypoints.openai.api_server --model m\n",
        "start": "#!/bin/bash\n$(touch " + str(markers / "start")
                 + ")\n`touch " + str(markers / "start-backticks") + "`\nvllm serve m --gpu-memory-utilization 0.98\n",
        "Dockerfile": "FROM python:3.11\nRUN touch " + str(markers / "Dockerfile")
                      + "\nCMD [\"vllm\", \"serve\", \"m\", \"--gpu-memory-utilization\", \"0.98\"]\n",
        "compose.yaml": (
            "services:\n"
            "  a:\n    command: vllm serve m --gpu-memory-utilization 0.98\n"
            "  b: !!python/object/apply:os.system ['touch " + str(markers / "compose-apply") + "']\n"
            "  c: !!python/object/new:subprocess.Popen [['touch', '" + str(markers / "compose-new") + "']]\n"
            "  d: !!python/name:os.system\n"
        ),
        "k8s/deploy.yaml": (
            "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n"
            "        - name: vllm\n          command: [vllm, serve, m, --gpu-memory-utilization, '0.98']\n"
            "          env: !!python/object/apply:os.system ['touch " + str(markers / "k8s") + "']\n"
        ),
        "README.md": "# Demo\n\n```python\n" + py("README.md-python") + LLM_CALL + "```\n\n```bash\ntouch "
                     + str(markers / "README.md-bash") + "\nvllm serve m --gpu-memory-utilization 0.98\n```\n",
        "pyproject.toml": "[build-system]\nrequires = ['setuptools']\nbuild-backend = 'backend'\nbackend-path = ['.']\n"
                          "[tool.vllm-lint]\n",
        "backend.py": py("backend.py"),
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "run.sh").chmod(0o755)
    (root / "start").chmod(0o755)
    return sorted(files)


def test_check_fix_and_init_never_run_the_users_code(tmp_path):
    root = tmp_path / "repo"
    markers = tmp_path / "markers"
    root.mkdir()
    markers.mkdir()
    _hostile_tree(root, markers)

    check = run_vllm_lint("check", "--no-cache", "--output-format", "json", ".", cwd=root)
    assert_no_traceback(check)
    reported = {f["filename"] for f in check.findings()}
    # The files were really read and analysed, not skipped: every one with a vLLM launch or engine in it
    # (the modules named like the ones vllm-lint imports, backend.py, the .pth file and pyproject.toml hold none).
    assert reported == {"server.py", "conftest.py", "setup.py", "run.sh", "start", "Dockerfile", "compose.yaml",
                        "k8s/deploy.yaml", "README.md", "__main__.py", "pkg/__init__.py", "sitecustomize.py",
                        "usercustomize.py"}

    fix = run_vllm_lint("check", "--fix", "--unsafe-fixes", "--no-cache", ".", cwd=root)
    assert_no_traceback(fix)
    assert "gpu_memory_utilization=0.90" in (root / "server.py").read_text()
    assert "vllm serve m" in (root / "run.sh").read_text()

    init = run_vllm_lint("init", "--target", "all", ".", cwd=root)
    assert init.returncode == 0, init.stderr
    assert (root / "AGENTS.md").is_file()

    assert sorted(p.name for p in markers.iterdir()) == []


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P (safe path) needs Python 3.11")
def test_python_dash_p_module_run_does_not_import_from_the_working_folder(tmp_path):
    """``python -P -m vllm_lint`` is the safe module form: a ``vllm_lint.py`` or ``yaml.py`` in the linted
    folder is not imported."""
    import subprocess

    markers = tmp_path / "markers"
    markers.mkdir()
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("vllm_lint.py", "yaml.py", "click.py", "libcst.py"):
        (root / name).write_text(_python_marker(markers, name))
    (root / "compose.yaml").write_text("services:\n  a:\n    command: vllm serve m --gpu-memory-utilization 0.98\n")
    proc = subprocess.run([sys.executable, "-P", "-m", "vllm_lint", "check", "--no-cache", "--select", "VLL202", "."],
                          cwd=root, capture_output=True, text=True, timeout=120, check=False, env=cli_env())
    assert proc.returncode == 1, proc.stderr
    assert "compose.yaml:3:52: VLL202" in proc.stdout
    assert sorted(p.name for p in markers.iterdir()) == []
    assert vllm_lint_command()  # the suite's own runs use the console script (or -P) for the same reason
