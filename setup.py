"""Ship the top-level rules/ and templates/ folders inside the wheel.

They stay at the top of the repository (one YAML per rule, one template per agent
target) and are installed as the packages ``vllm_lint._rules`` and
``vllm_lint._templates``; ``vllm_lint.resources`` finds them in either place.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["vllm_lint", "vllm_lint.*"]) + ["vllm_lint._rules", "vllm_lint._templates"],
    package_dir={"vllm_lint._rules": "rules", "vllm_lint._templates": "templates"},
    package_data={
        "vllm_lint": [
            "vllm_api/data/*.json",
            "data/*.jsonl",
            "agent_rules/*.yaml",
            "py.typed",
            "reference/spawned_site/*.py",
        ],
        "vllm_lint._rules": ["*.yaml"],
        "vllm_lint._templates": ["*.j2", "**/*.j2"],
    },
)
