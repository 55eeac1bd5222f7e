"""The editor's settings (initialization options, ``workspace/didChangeConfiguration``) over the project's
configuration file."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_lint.config import ConfigError
from vllm_lint.lsp.settings import EditorSettings, SettingsResolver


def test_editor_settings_as_clients_write_them():
    assert EditorSettings.from_json(None) == EditorSettings()
    nested = {"vllm-lint": {"select": ["VLL1"], "ignore": "VLL101, VLL103", "extendSelect": ["VLL2"],
                            "preview": True, "targetVllmVersion": " 0.8 ", "debounceMs": 40}}
    assert EditorSettings.from_json(nested) == EditorSettings(
        select=("VLL1",), ignore=("VLL101", "VLL103"), extend_select=("VLL2",), preview=True,
        target_vllm_version="0.8", debounce_ms=40)
    assert EditorSettings.from_json({"vllmLint": {"target-vllm-version": "0.6.3"}}).target_vllm_version == "0.6.3"
    # A value of the wrong type is left at its default, a rule list of the wrong type is an error.
    assert EditorSettings.from_json({"debounceMs": -1, "preview": "yes"}) == EditorSettings()
    with pytest.raises(ConfigError, match="select"):
        EditorSettings.from_json({"select": 3})


def test_the_editor_overrides_the_configuration_file(tmp_path: Path):
    (tmp_path / "vllm-lint.toml").write_text('select = ["VLL2"]\ntarget-vllm-version = "0.32"\n')
    path = tmp_path / "app.py"
    plain = SettingsResolver().options(path)
    from vllm_lint.rulebook import preview_codes

    # rules in preview run only where preview is on
    assert plain.enabled == {code for code in plain.codes if code.startswith("VLL2")} - preview_codes() | {"VLL000"}
    assert plain.settings.target_vllm_version == "0.32"

    resolver = SettingsResolver(EditorSettings(select=("VLL101",), target_vllm_version="0.8"))
    options = resolver.options(path)
    assert options.enabled == {"VLL101", "VLL000"}
    assert options.settings.target_vllm_version == "0.8"

    resolver.editor = EditorSettings(target_vllm_version="not a version")
    with pytest.raises(ConfigError, match="targetVllmVersion"):
        resolver.options(path)


def test_the_configuration_file_is_read_again_when_it_changes(tmp_path: Path):
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.vllm-lint]\nignore = ["VLL101"]\n')
    resolver = SettingsResolver()
    assert "VLL101" not in resolver.options(tmp_path / "app.py").enabled
    config.write_text('[tool.vllm-lint]\nignore = ["VLL1", "VLL2"]\n')  # another size: another stamp
    assert not any(code.startswith(("VLL1", "VLL2")) for code in resolver.options(tmp_path / "app.py").enabled)


def test_without_a_configuration_file_the_workspace_folder_is_the_root(tmp_path: Path):
    folder = tmp_path / "workspace"
    (folder / "src").mkdir(parents=True)
    resolver = SettingsResolver()
    assert resolver.options(folder / "src" / "app.py", folder).settings.root == folder
    assert resolver.options(tmp_path / "other.py").settings.root == tmp_path


def test_the_editors_preview_setting_turns_preview_on_and_off(tmp_path: Path):
    (tmp_path / "vllm-lint.toml").write_text("preview = true\n")
    path = tmp_path / "app.py"
    assert SettingsResolver().options(path).settings.preview is True
    assert SettingsResolver(EditorSettings(preview=False)).options(path).settings.preview is False
    (tmp_path / "vllm-lint.toml").write_text("")
    assert SettingsResolver(EditorSettings(preview=True)).options(path).settings.preview is True
