"""vLLM command lines started from Python: subprocess / os.exec* argument lists and shell strings."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from findings import code_lines, codes
from fixture_files import COMMAND_FIXTURES as FIXTURES, lint_in
from lintutil import lint_text, run_cli


def test_launcher_script():
    diagnostics = lint_in(FIXTURES, "launch_server.py")
    assert code_lines(diagnostics) == [
        # server_command(): a list built in a helper, started with CUDA_VISIBLE_DEVICES=0,1 from start()
        ("VLL205", 19), ("VLL403", 19), ("VLL401", 19), ("VLL202", 22),
        # start_pinned(): tensor parallel 4 on four devices, bound to localhost; only the bad method
        ("VLL206", 36),
        # start_in_shell(): the `{extra}` flags may carry anything, so only the os.system line is checked
        ("VLL201", 44), ("VLL402", 44), ("VLL403", 44),
        # start_from_string(): shlex.split of an f-string
        ("VLL201", 48), ("VLL203", 48), ("VLL204", 48),
    ]
    by_code = {d.code: d for d in diagnostics if d.start.line in (19, 22, 36)}
    lines = (FIXTURES / "launch_server.py").read_text().splitlines()

    def at(d) -> str:
        return lines[d.start.line - 1][d.start.column - 1 :]

    assert at(by_code["VLL401"]).startswith('"vllm.entrypoints.openai.api_server"')
    assert at(by_code["VLL202"]).startswith('"0.98"')
    assert at(by_code["VLL206"]).startswith('"int4"')
    assert at(by_code["VLL403"]).startswith("sys.executable")


def test_benchmark_harness():
    # docker run from a list (4 devices, key in -e): VLL404 only; a list extended elsewhere is not
    # reported as missing anything; a noqa comment on the statement's first line; an env copied and updated
    # may hold a key; a log message that quotes a command is not a launch
    assert code_lines(lint_in(FIXTURES, "bench_harness.py")) == [("VLL404", 21), ("VLL206", 38)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # module constants are folded; the finding sits on the name
        ('import subprocess\nUTIL = "0.99"\nsubprocess.run(["vllm", "serve", "m", "--gpu-memory-utilization", UTIL])\n', [("VLL203", 3), ("VLL403", 3), ("VLL202", 3)]),
        # an argument computed at run time is unknown, never guessed
        ("import subprocess\ndef go(u):\n    subprocess.run(['vllm', 'serve', 'm', '--gpu-memory-utilization', str(u)])\n", [("VLL203", 3), ("VLL403", 3)]),
        # f"--flag={x}": the flag is set, its value unknown
        ('import subprocess\ndef go(n):\n    subprocess.run(["vllm", "serve", "m", f"--max-model-len={n}"])\n', [("VLL201", 3), ("VLL403", 3)]),
        # a list handed in by the caller is not followed
        ("import subprocess\ndef go(cmd):\n    subprocess.run(cmd)\n", []),
        # without shell=True a string is a program name, not a command line
        ('import subprocess\nsubprocess.run("vllm serve m --gpu-memory-utilization 0.99")\n', []),
        ('import subprocess\nsubprocess.run("vllm serve m --gpu-memory-utilization 0.99", shell=True)\n', [("VLL202", 2), ("VLL203", 2), ("VLL403", 2)]),
        # a command string built as an f-string a line above and run by a shell: read at the string
        ('import subprocess\nm = "m"\ncmd = f"vllm serve {m} --gpu-memory-utilization 0.99"\nsubprocess.Popen(cmd, shell=True)\n', [("VLL202", 3), ("VLL203", 3), ("VLL403", 3)]),
        ('import os\ndef go(m):\n    cmd = f"vllm serve {m} --swap-space 4 --host ::1"\n    os.system(cmd)\n', [("VLL201", 3), ("VLL203", 3), ("VLL206", 3)]),
        # a string grown after it is built, or bound twice, is not followed
        ('import subprocess\ncmd = f"vllm serve m --gpu-memory-utilization 0.99"\ncmd += " --max-model-len 8192"\nsubprocess.Popen(cmd, shell=True)\n', []),
        ('import subprocess\ndef go(big):\n    cmd = "vllm serve m --swap-space 4"\n    if big:\n        cmd = "vllm serve n"\n    subprocess.Popen(cmd, shell=True)\n', []),
        # `"...".split()` and asyncio's shell variant
        ('import subprocess\nsubprocess.run("vllm serve m --swap-space 4".split())\n', [("VLL201", 2), ("VLL203", 2), ("VLL206", 2), ("VLL403", 2)]),
        ('import asyncio\nasync def go():\n    await asyncio.create_subprocess_shell("vllm serve m -tp 2 --host 127.0.0.1")\n', [("VLL201", 3), ("VLL203", 3)]),
        # the child's environment: a key given, a mapping we cannot see, CUDA_VISIBLE_DEVICES via dict()
        ('import os, subprocess\nsubprocess.run(["vllm", "serve", "m"], env={"VLLM_API_KEY": "k"})\n', [("VLL201", 2), ("VLL203", 2)]),
        ("import subprocess\ndef go(e):\n    subprocess.run(['vllm', 'serve', 'm'], env=e)\n", [("VLL201", 3), ("VLL203", 3)]),
        ('import os, subprocess\nsubprocess.run(["vllm", "serve", "m", "-tp", "2"], env=dict(os.environ, CUDA_VISIBLE_DEVICES="0"))\n', [("VLL201", 2), ("VLL203", 2), ("VLL403", 2), ("VLL205", 2)]),
        ('import os, subprocess\nos.environ["VLLM_API_KEY"] = "k"\nsubprocess.run(["vllm", "serve", "m"])\n', [("VLL201", 3), ("VLL203", 3)]),
        # the interpreter's -m entrypoints and a module vLLM does not have
        ('import subprocess, sys\nsubprocess.run([sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", "m", "--host", "::1"])\n', [("VLL201", 2), ("VLL203", 2)]),
        ('import subprocess\nsubprocess.run(["python3", "-m", "vllm.entrypoints.openai.benchmark", "--x"])\n', [("VLL303", 2)]),
        # other libraries' servers and mere mentions
        ('import subprocess\nsubprocess.run(["python", "-m", "sglang.launch_server", "--model", "m"])\n', []),
        ('import subprocess\nprint("vllm serve m --gpu-memory-utilization 0.99")\nsubprocess.run(["ls"])\n', []),
    ],
)
def test_python_command_lines(tmp_path, source, expected):
    assert code_lines(lint_text(tmp_path, "launcher.py", source)) == expected


def test_each_command_reported_once_however_often_it_is_started(tmp_path):
    source = (
        "import subprocess\n"
        "def command():\n"
        '    return ["vllm", "serve", "m", "--gpu-memory-utilization", "0.99"]\n'
        "subprocess.Popen(command())\n"
        "subprocess.run(command())\n"
    )
    assert sorted(d.code for d in lint_text(tmp_path, "launcher.py", source) if d.code == "VLL202") == ["VLL202"]


def test_python_fence_in_markdown_goes_through_the_same_rules(tmp_path):
    text = "Run it from Python:\n\n```python\nimport subprocess\nsubprocess.run(['vllm', 'serve', 'm', '--quantization', 'int4'])\n```\n"
    assert code_lines(lint_text(tmp_path, "README.md", text)) == [("VLL201", 5), ("VLL203", 5), ("VLL403", 5), ("VLL206", 5)]


# -- fixes ---------------------------------------------------------------------------------------


def _fix(tmp_path: Path, source: str, select: str, unsafe: bool = False) -> str:
    path = tmp_path / "launcher.py"
    path.write_text(source, encoding="utf-8")
    args = ["check", "--fix", "--exit-zero", "--isolated", "--select", select, str(path)]
    if unsafe:
        args.insert(2, "--unsafe-fixes")
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    return path.read_text(encoding="utf-8")


def test_api_server_list_keeps_the_interpreter_and_the_layout(tmp_path):
    source = (
        "import subprocess\nimport sys\n\nMODEL = 'm'\n"
        "cmd = [\n"
        "    sys.executable, '-m', 'vllm.entrypoints.openai.api_server',\n"
        "    '--model', MODEL,\n"
        "    '--port', '8000',\n"
        "]\n"
        "subprocess.Popen(cmd)\n"
    )
    fixed = _fix(tmp_path, source, "VLL401")
    assert fixed == (
        "import subprocess\nimport sys\n\nMODEL = 'm'\n"
        "cmd = [\n"
        "    sys.executable, '-m', 'vllm.entrypoints.cli.main',\n"
        "    'serve', MODEL,\n"
        "    '--port', '8000',\n"
        "]\n"
        "subprocess.Popen(cmd)\n"
    )
    assert codes(lint_text(tmp_path, "again.py", fixed)) == ["VLL201", "VLL203", "VLL403"]


def test_model_flag_moves_to_the_positional(tmp_path):
    fixed = _fix(tmp_path, 'import subprocess\nsubprocess.run(["vllm", "serve", "--port", "80", "--model", "m"])\n', "VLL401")
    assert fixed == 'import subprocess\nsubprocess.run(["vllm", "serve", "m", "--port", "80"])\n'


def test_shell_string_is_rewritten_inside_the_string(tmp_path):
    source = "import os\nos.system('python3 -m vllm.entrypoints.openai.api_server --model m --host 127.0.0.1')\n"
    assert _fix(tmp_path, source, "VLL401") == "import os\nos.system('vllm serve m --host 127.0.0.1')\n"


def test_missing_flag_is_appended_to_the_list(tmp_path):
    source = 'import subprocess\nsubprocess.run(["vllm", "serve", "m", "--gpu-memory-utilization", "0.9"], check=True)\n'
    fixed = _fix(tmp_path, source, "VLL203", unsafe=True)
    assert fixed == source.replace('"0.9"]', '"0.9", "--max-model-len", "8192"]')
    assert fixed.count("--max-model-len") == 1


def test_typo_is_renamed_in_its_element(tmp_path):
    source = "import subprocess\nsubprocess.run(['vllm', 'serve', 'm', '--tensor-paralel-size=2'])\n"
    assert _fix(tmp_path, source, "VLL206") == source.replace("'--tensor-paralel-size=2'", "'--tensor-parallel-size=2'")


def test_fixture_fix_round_trip(tmp_path):
    path = tmp_path / "launch_server.py"
    shutil.copy(FIXTURES / "launch_server.py", path)
    result = run_cli("check", "--fix", "--unsafe-fixes", "--exit-zero", "--isolated", str(path))
    assert result.returncode == 0, result.stderr
    text = path.read_text()
    assert '"vllm.entrypoints.cli.main",\n        "serve", MODEL,' in text
    compile(text, str(path), "exec")  # still Python
    again = run_cli("check", "--diff", "--unsafe-fixes", "--isolated", str(path))
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "No fixes available.\n")
