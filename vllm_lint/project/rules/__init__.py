"""The project rules: each joins the facts every file of a run reported (``vllm_lint.project.facts``) into
findings in some of them.

``<family>.py`` holds the checkers, each marked ``@project_rule(code)``; ``<family>_prefilter.py`` the byte
conditions under which a Python file can tell the family's codes something. Nothing imports these modules:
``vllm_lint.registry`` finds and loads them by name.
"""
