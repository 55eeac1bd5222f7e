"""The linter on hostile files, in one run with good ones: each bad file gets one clear VLL000 (or its normal
findings when it is merely unusual), the run goes on, the good files' findings are still reported, and no
traceback reaches the user.

``--select VLL202`` keeps the expectations exact: VLL000 is never switched off by ``select``, and VLL202
(gpu_memory_utilization 0.98) marks where a file's real finding must land.
"""

from __future__ import annotations

import itertools
import os
import stat
import threading
import time
from pathlib import Path


from .conftest import (
    GOOD_PY,
    LLM_LINE,
    assert_no_traceback,
    run_vllm_lint,
    skip_unless_chmod_blocks,
    summary,
)

L = LLM_LINE
IMPORT = b"from vllm import LLM\n"
_LETTERS = [bytes([c]) for c in b"abcdefgh"]  # a billion-laughs ladder: h is 9**8 "vllm"s when expanded
MD_CMD = b"```bash\nvllm serve m --gpu-memory-utilization 0.98\n```\n"
ENORMOUS_LINES = 300_000

# name -> (bytes, expected findings as (code, row, column, words the message must contain))
CASES: dict[str, tuple[bytes, list[tuple[str, int, int, str]]]] = {
    "good.py": (GOOD_PY, [("VLL202", 2, 45, "0.98")]),
    "syntax_error.py": (IMPORT + b'llm = LLM(model="m"\n', [("VLL000", 2, 1, "syntax error")]),
    "nul_byte.py": (IMPORT + b"x = 1\x00\n" + L + b"\n", [("VLL000", 2, 6, "NUL byte")]),
    "undecodable.py": (IMPORT + b'x = "\xff\xfe"\n' + L + b"\n", [("VLL000", 2, 6, "cannot decode as utf-8")]),
    "cookie_latin1.py": (b"# -*- coding: latin-1 -*-\n" + IMPORT + b'x = "\xe9"\n' + L + b"\n", [("VLL202", 4, 45, "0.98")]),
    "cookie_unknown.py": (b"# -*- coding: no-such-codec -*-\n" + IMPORT + L + b"\n",
                          [("VLL000", 1, 1, "invalid encoding declaration")]),
    "cookie_lies.py": (b"# coding: ascii\n" + IMPORT + b'x = "\xc3\xa9"\n' + L + b"\n", [("VLL000", 3, 6, "cannot decode as ascii")]),
    "bom.py": (b"\xef\xbb\xbf" + GOOD_PY, [("VLL202", 2, 45, "0.98")]),
    "bom_only.py": (b"\xef\xbb\xbf", []),
    "crlf.py": (GOOD_PY.replace(b"\n", b"\r\n"), [("VLL202", 2, 45, "0.98")]),
    "cr_only.py": (GOOD_PY.replace(b"\n", b"\r"), [("VLL202", 2, 45, "0.98")]),
    "mixed_endings.py": (b"from vllm import LLM\r\nimport os\n" + L + b"\r\n", [("VLL202", 3, 45, "0.98")]),
    "tabs.py": (IMPORT + b"if True:\n\t" + L + b"\n", [("VLL202", 3, 46, "0.98")]),
    "form_feed.py": (IMPORT + b"x = 1\n\x0c\n" + L + b"\n", [("VLL202", 4, 45, "0.98")]),
    "empty.py": (b"", []),
    # Refused before LibCST parses them (python/complexity.py), at the statement: LibCST's tree would be deeper
    # than vllm-lint follows; Python itself refuses more than 200 nested parentheses.
    "nested_1000.py": (IMPORT + L + b"\nx = " + b"+".join([b"1"] * 1000) + b"\n", [("VLL000", 3, 1, "1000 levels deep")]),
    "parens_1000.py": (IMPORT + L + b"\nx = " + b"(" * 1000 + b"1" + b")" * 1000 + b"\n", [("VLL000", 3, 1, "too many nested parentheses")]),
    "long_string.py": (IMPORT + L + b'\nx = "' + b"a" * 1_000_000 + b'"\n', [("VLL202", 2, 45, "0.98")]),
    "enormous_plain.py": (b"".join(b"x%d = %d  # filler\n" % (i, i) for i in range(ENORMOUS_LINES)), []),
    "enormous.md": (b"".join(b"line %d of prose\n" % i for i in range(ENORMOUS_LINES)) + MD_CMD,
                    [("VLL202", ENORMOUS_LINES + 2, 39, "0.98")]),
    "double_quote.sh": (b'#!/bin/sh\nvllm serve m --gpu-memory-utilization "0.98\n', [("VLL000", 2, 39, "unterminated double quote")]),
    "single_quote.sh": (b"#!/bin/sh\nvllm serve m --gpu-memory-utilization '0.98\n", [("VLL000", 2, 39, "unterminated single quote")]),
    "substitution.sh": (b"#!/bin/sh\nvllm serve $(echo m --gpu-memory-utilization 0.98\n", [("VLL000", 2, 12, "unterminated command substitution")]),
    "crlf.sh": (b"#!/bin/sh\r\nvllm serve m --gpu-memory-utilization 0.98\r\n", [("VLL202", 2, 39, "0.98")]),
    "nul.md": (b"# x\n\x00\n" + MD_CMD, [("VLL000", 2, 1, "NUL byte")]),
    "unclosed_fence.md": (b"# x\n```bash\nvllm serve m --gpu-memory-utilization 0.98\n", [("VLL202", 3, 39, "0.98")]),
    "Dockerfile": (b'FROM python:3.11\nRUN pip install vllm\nCMD ["vllm", "serve", "m", "--gpu-memory-utilization", "0.98"]\n',
                   [("VLL202", 3, 56, "0.98")]),
    "Dockerfile.unterminated": (b'FROM python:3.11\nCMD ["vllm", "serve", "m", "--gpu-memory-utilization", "0.98"\nRUN \\\n', []),
    "compose.yaml": ((b"services:\n  a:\n    command: vllm serve m --gpu-memory-utilization 0.98\n"
                      b"  b: !!python/object/apply:os.system [\"echo pwned\"]\n"), [("VLL202", 3, 52, "0.98")]),
    "docker-compose.broken.yml": (b"services:\n  a:\n    command: [vllm serve m\n", [("VLL000", 4, 1, "invalid YAML")]),
    "docker-compose.tabs.yml": (b"services:\n\ta:\n\t\tcommand: vllm serve m\n", [("VLL000", 2, 1, "invalid YAML")]),
    "docker-compose.alias.yml": (b"services:\n  a:\n    command: *nowhere\n# vllm\n", [("VLL000", 3, 14, "undefined alias")]),
    "docker-compose.laughs.yml": (
        b"a: &a [vllm,vllm,vllm,vllm,vllm,vllm,vllm,vllm,vllm]\n"
        + b"".join(b"%s: &%s [%s]\n" % (n, n, b",".join([b"*" + p] * 9)) for p, n in itertools.pairwise(_LETTERS))
        + b"services:\n  x:\n    command: vllm serve m --gpu-memory-utilization 0.98\n    environment: *h\n    entrypoint: *h\n",
        [("VLL202", 11, 52, "0.98")],
    ),
    "deploy.yaml": (b"kind: Deployment\nspec: !!python/name:os.system\n  x: [vllm\n", [("VLL000", 4, 1, "invalid YAML")]),
}


def _write_corpus(root: Path) -> dict[str, list[tuple[str, int, int, str]]]:
    expected = {}
    for name, (data, findings) in CASES.items():
        (root / name).write_bytes(data)
        expected[name] = findings
    # Directories named like files, with a file inside that is linted as usual.
    (root / "pkg.py").mkdir()
    (root / "pkg.py" / "inner.py").write_bytes(GOOD_PY)
    expected["pkg.py/inner.py"] = [("VLL202", 2, 45, "0.98")]
    (root / "Dockerfile.d").mkdir()
    # Special files: a FIFO would block a reader forever, /dev/zero never ends; a broken link.
    os.mkfifo(root / "pipe.py")
    expected["pipe.py"] = [("VLL000", 1, 1, "not a regular file")]
    (root / "zero.py").symlink_to("/dev/zero")
    expected["zero.py"] = [("VLL000", 1, 1, "not a regular file")]
    (root / "dangling.py").symlink_to("no-such-file.py")
    expected["dangling.py"] = [("VLL000", 1, 1, "broken symlink")]
    # A folder link back up (a loop for a naive walker).
    (root / "sub").mkdir()
    (root / "sub" / "up").symlink_to("..")
    return expected


def _check(run_findings: list[dict], expected: dict[str, list[tuple[str, int, int, str]]]) -> None:
    want = {(name, code, row, col) for name, items in expected.items() for code, row, col, _ in items}
    assert summary(run_findings) == want
    words = {(name, code): text for name, items in expected.items() for code, _, _, text in items}
    for finding in run_findings:
        assert words[(finding["filename"], finding["code"])] in finding["message"], finding


def test_one_run_over_hostile_and_good_files(tmp_path):
    """The CLI as a user runs it, in a real process: exact findings for every file, exit 1, no traceback."""
    expected = _write_corpus(tmp_path)
    # 5,000 nested parentheses overflow LibCST's native parser's stack; the complexity guard refuses them first.
    # A file that still crashes it is isolated in a child process: tests/test_workers.py has that case and the
    # time-out's; docs/robustness.md has the figures.
    (tmp_path / "parens_5000.py").write_bytes(IMPORT + L + b"\nx = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n")
    expected["parens_5000.py"] = [("VLL000", 3, 1, "too many nested parentheses")]
    started = time.monotonic()
    run = run_vllm_lint("check", "--no-cache", "--select", "VLL202", "--output-format", "json", ".", cwd=tmp_path)
    elapsed = time.monotonic() - started
    assert_no_traceback(run)
    assert run.returncode == 1
    _check(run.findings(), expected)
    assert elapsed < 60, f"the run took {elapsed:.1f} s"


def test_hostile_files_named_on_the_command_line(tmp_path, invoke):
    """Named one by one on the command line (as pre-commit passes them), each file still gets exactly its findings."""
    expected = _write_corpus(tmp_path)
    names = sorted(name for name in expected if not name.startswith("enormous"))  # those cost a second each
    run = invoke("check", "--no-cache", "--select", "VLL202", "--output-format", "json", *names, cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    _check(run.findings(), {name: expected[name] for name in names})


def test_unreadable_file(tmp_path, invoke):
    skip_unless_chmod_blocks(tmp_path)
    (tmp_path / "good.py").write_bytes(GOOD_PY)
    locked = tmp_path / "locked.py"
    locked.write_bytes(GOOD_PY)
    locked.chmod(0)
    try:
        run = invoke("check", "--no-cache", "--select", "VLL202", "--output-format", "json", ".", cwd=tmp_path)
    finally:
        locked.chmod(0o644)
    _check(run.findings(), {"good.py": [("VLL202", 2, 45, "0.98")], "locked.py": [("VLL000", 1, 1, "permission denied")]})


def test_unreadable_folder_is_reported(tmp_path, invoke):
    skip_unless_chmod_blocks(tmp_path)
    (tmp_path / "good.py").write_bytes(GOOD_PY)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "hidden.py").write_bytes(GOOD_PY)
    locked.chmod(0)
    try:
        run = invoke("check", "--no-cache", "--select", "VLL202", "--output-format", "json", ".", cwd=tmp_path)
    finally:
        locked.chmod(0o755)
    assert summary(run.findings()) == {("good.py", "VLL202", 2, 45)}
    assert "locked" in run.stderr


def test_files_vanishing_between_discovery_and_reading(tmp_path):
    """A file listed by discovery and deleted before it is read is one VLL000, not a crash."""
    from vllm_lint.config import Settings, enabled_codes
    from vllm_lint.rulebook import all_codes
    from vllm_lint.engine.discovery import discover
    from vllm_lint.engine.runner import RunOptions, lint_file
    from vllm_lint.surfaces import all_surfaces

    for name in ("a.py", "b.py", "c.sh"):
        (tmp_path / name).write_bytes(GOOD_PY if name.endswith(".py") else b"vllm serve m --gpu-memory-utilization 0.98\n")
    codes = all_codes()
    settings = Settings(root=tmp_path)
    options = RunOptions(settings, enabled_codes(settings, codes, ("VLL202",)), codes)
    files = list(discover([tmp_path], settings, all_surfaces()))
    assert [p.name for p, _ in files] == ["a.py", "b.py", "c.sh"]
    (tmp_path / "b.py").unlink()
    (tmp_path / "c.sh").unlink()
    results = {p.name: [(d.code, d.message) for d in lint_file(p, s, options).diagnostics] for p, s in files}
    assert results == {
        "a.py": [("VLL202", results["a.py"][0][1])],
        "b.py": [("VLL000", "file vanished before it could be read")],
        "c.sh": [("VLL000", "file vanished before it could be read")],
    }


def test_files_vanishing_while_a_real_run_goes_on(tmp_path):
    """A real process over 200 files while another thread deletes and re-creates them: never a traceback;
    every finding is either the file's real finding or 'file vanished'."""
    script = b"vllm serve m --gpu-memory-utilization 0.98\n"
    names = [f"f{i:03d}.sh" for i in range(200)]
    for name in names:
        (tmp_path / name).write_bytes(script)
    stop = threading.Event()
    vanished = 0

    def churn():
        i = 0
        while not stop.is_set():
            path = tmp_path / names[(i * 7) % len(names)]
            path.unlink(missing_ok=True)
            time.sleep(0.0005)
            path.write_bytes(script)
            i += 1

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        runs = [run_vllm_lint("check", "--no-cache", "--select", "VLL202", "--output-format", "json", ".", cwd=tmp_path)
                for _ in range(2)]
    finally:
        stop.set()
        thread.join()
    for run in runs:
        assert_no_traceback(run)
        for finding in run.findings():
            assert finding["filename"] in names
            assert (finding["code"], finding["location"]["row"], finding["location"]["column"]) in {
                ("VLL202", 1, 39), ("VLL000", 1, 1)}, finding
            if finding["code"] == "VLL000":
                assert finding["message"] == "file vanished before it could be read"
                vanished += 1
        assert len(run.findings()) >= len(names) - 5  # a file is gone for half a millisecond at a time
    print(f"{vanished} 'file vanished' findings over {len(runs)} runs")


# Known bugs outside the files this suite may change: kept as strict xfails so that a fix shows up.


def test_symlink_loop_named_on_the_command_line(tmp_path):
    (tmp_path / "good.py").write_bytes(GOOD_PY)
    (tmp_path / "loop.py").symlink_to("loop.py")
    run = run_vllm_lint("check", "--no-cache", "--select", "VLL202", "--output-format", "json", "loop.py", "good.py",
                        cwd=tmp_path)
    assert_no_traceback(run)
    _check(run.findings(), {"good.py": [("VLL202", 2, 45, "0.98")], "loop.py": [("VLL000", 1, 1, "symbolic links")]})


def test_symlink_loop_met_in_a_walk_is_reported(tmp_path, invoke):
    (tmp_path / "good.py").write_bytes(GOOD_PY)
    (tmp_path / "self.py").symlink_to("self.py")
    (tmp_path / "a.py").symlink_to("b.py")
    (tmp_path / "b.py").symlink_to("a.py")
    run = invoke("check", "--no-cache", "--select", "VLL202", "--output-format", "json", ".", cwd=tmp_path)
    assert {f["filename"] for f in run.findings()} == {"good.py", "self.py", "a.py", "b.py"}


def test_fifo_without_suffix_does_not_hang_discovery(tmp_path):
    from vllm_lint.config import Settings
    from vllm_lint.engine.discovery import discover
    from vllm_lint.surfaces import all_surfaces

    (tmp_path / "good.py").write_bytes(GOOD_PY)
    fifo = tmp_path / "run"
    os.mkfifo(fifo)
    found: list = []
    thread = threading.Thread(target=lambda: found.extend(discover([tmp_path], Settings(root=tmp_path), all_surfaces())))
    thread.start()
    thread.join(timeout=60)  # a walk that opens the FIFO blocks for good: the limit only says so
    hung = thread.is_alive()
    if hung:  # unblock the reader: open the FIFO for writing and close it
        fd = os.open(fifo, os.O_WRONLY)
        os.close(fd)
        thread.join()
    assert not hung
    assert [p.name for p, _ in found] == ["good.py"]


def test_form_feed_at_line_start_column(tmp_path, invoke):
    (tmp_path / "ff.py").write_bytes(IMPORT + b"\x0c" + L + b"\n")
    run = invoke("check", "--no-cache", "--select", "VLL202", "--output-format", "json", "ff.py", cwd=tmp_path)
    assert summary(run.findings()) == {("ff.py", "VLL202", 2, 46)}


def test_special_file_modes_are_what_the_test_meant(tmp_path):
    """Guard for the corpus itself: the FIFO is a FIFO and the folder named like a file is a folder."""
    _write_corpus(tmp_path)
    assert stat.S_ISFIFO((tmp_path / "pipe.py").lstat().st_mode)
    assert (tmp_path / "pkg.py").is_dir()


def test_a_symlink_named_first_does_not_choose_the_configuration(tmp_path, invoke):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "pyproject.toml").write_text('[tool.vllm-lint]\nextend-exclude = ["*.py"]\n')
    (outside / "x.py").write_text("x = 1\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_bytes(GOOD_PY)
    (project / "0.py").symlink_to(outside / "x.py")
    run = invoke("check", "--no-cache", "--force-exclude", "--select", "VLL202", "--output-format", "json",
                 "0.py", "a.py", cwd=project)
    assert summary(run.findings()) == {("a.py", "VLL202", 2, 45)}


def test_line_separator_in_a_yaml_comment(tmp_path, invoke):
    (tmp_path / "compose.yaml").write_bytes("services:\n  a:\n    image: x  # a\u2028note\n"
                                            "    command: vllm serve m --gpu-memory-utilization 0.98\n".encode())
    run = invoke("check", "--no-cache", "--select", "VLL202", "--output-format", "json", "compose.yaml", cwd=tmp_path)
    assert summary(run.findings()) == {("compose.yaml", "VLL202", 4, 52)}
