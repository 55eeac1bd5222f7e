"""A fix regenerates only the statement it changes, and the file comes out as regenerating the whole module
with the replacement would make it (LibCST's own ``deep_replace``), wherever the statement is."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixture_files import REPO, SEEDS
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.python import checker
from vllm_lint.surfaces.python import PYTHON
from vllm_lint.rulebook import all_codes
from vllm_lint.surfaces import LintJob

CORPUS = {path.name: path for path in sorted([*SEEDS.glob("*.py"), *(REPO / "examples").glob("*.py")])}
# The files of CORPUS that fixes edit, with the number of statements the fixes replace in each.
EDITS = {
    "000_bad_pipeline_server.py": 1,
    "000_good_async_engine_server.py": 3,
    "004_server.py": 4,
    "vll101_sync_pipeline_in_handler.py": 1,
    "vll102_hf_generate_in_handler.py": 1,
    "vll103_offline_llm_in_server.py": 1,
    "vll104_model_load_in_handler.py": 2,
    "vll106_constant_request_id.py": 2,
    "vll107_blocking_llm_client_in_async_handler.py": 3,
    "vll109_model_load_per_rerun.py": 1,
    "vll201_missing_gpu_memory_utilization.py": 1,
    "vll202_gpu_memory_utilization_out_of_range.py": 1,
    "vll203_missing_max_model_len.py": 1,
    "vll204_prefix_caching_disabled.py": 1,
    "vll206_unknown_engine_arg.py": 2,
    "vll207_enforce_eager_in_server.py": 1,
    "vll301_unknown_sampling_param.py": 1,
    "vll302_implicit_max_tokens.py": 1,
    "vll304_served_model_name_mismatch.py": 2,
    "vll402_unpinned_remote_code.py": 1,
    "vll501_legacy_engine_import.py": 1,
    "vll502_tuple_return_in_fastapi.py": 2,
}

SAMPLING = "SamplingParams(temperature=0, max_new_tokens=64)"
# The same fixable call, at the places a statement can be: each gets VLL301's rename.
PLACES = {
    "top level": f"from vllm import SamplingParams\nparams = {SAMPLING}\n",
    "no newline at the end": f"from vllm import SamplingParams\nparams = {SAMPLING}",
    "in a function after comments": (
        "from vllm import SamplingParams\n\n\ndef make():\n    # why\n\n    # more\n"
        f"    params = {SAMPLING}\n    return params\n"
    ),
    "elif and else": (
        "from vllm import SamplingParams\nif a:\n    pass\n"
        f"elif b:\n    p = {SAMPLING}\nelse:\n    q = {SAMPLING}\n"
    ),
    "an elif's own test": f"from vllm import SamplingParams\nif a:\n    pass\nelif {SAMPLING}:\n    pass\n",
    "tabs and a method": (
        f"from vllm import SamplingParams\nclass A:\n\tdef f(self):\n\t\twith x:\n\t\t\treturn {SAMPLING}\n"
    ),
    "semicolons": f"from vllm import SamplingParams\nif a: b = 1; p = {SAMPLING}\n",
    "match case": (
        "from vllm import SamplingParams\nmatch x:\n    case 1:\n"
        f"        p = {SAMPLING}\n    case _:\n        pass\n"
    ),
    "decorator": f"from vllm import SamplingParams\n\n@use({SAMPLING})\ndef f():\n    pass\n",
    "crlf": f"from vllm import SamplingParams\r\ndef f():\r\n    return {SAMPLING}\r\n",
    "try and finally": f"from vllm import SamplingParams\ntry:\n    pass\nfinally:\n    p = {SAMPLING}\n",
}


def _fixed_edits(path: Path, text: str) -> list[tuple[str | None, str | None]]:
    """(the text a fix makes, the text LibCST makes of the whole module) for each replacement a fix asks for."""
    made = []
    replaced_text = checker._replaced_text

    def recording(module, text, edit, locator):
        new = replaced_text(module, text, edit, locator)
        made.append((new, module.deep_replace(edit.node, edit.replacement).code))
        return new

    # Named by the file's name alone, as linted from its folder: a path through tests/ would make a seed a
    # test file, which the serving rules (and their fixes) leave alone.
    job = LintJob(path, path.name, text.encode("utf-8"), frozenset(all_codes()), LaunchSettings())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checker, "_replaced_text", recording)
        PYTHON.lint(job)
    return made


@pytest.mark.parametrize("name", sorted(EDITS))
def test_fixes_in_real_files_equal_regenerating_the_module(name: str):
    made = _fixed_edits(CORPUS[name], CORPUS[name].read_text(encoding="utf-8"))
    assert len(made) == EDITS[name]
    for new, whole in made:
        assert new == whole


def test_no_other_real_file_asks_for_a_fix():
    """Where a fix starts to edit one of the other files, it belongs in EDITS."""
    asked = [name for name in sorted(set(CORPUS) - set(EDITS))
             if _fixed_edits(CORPUS[name], CORPUS[name].read_text(encoding="utf-8"))]
    assert asked == []


@pytest.mark.parametrize("place", PLACES)
def test_a_fix_anywhere_equals_regenerating_the_module(place: str, tmp_path: Path):
    text = PLACES[place]
    made = _fixed_edits(tmp_path / "m.py", text)
    assert made, "no fix was asked for"
    for new, whole in made:
        assert new == whole
        assert "max_tokens=64" in new and new.count("max_new_tokens") == text.count("max_new_tokens") - 1
