"""The rules on a file's noqa comments: each reads the findings of the file's other rules before the comments
take theirs out (``vllm_lint.engine.suppressions.FileNoqa``).

``<family>.py`` holds the checkers, each marked ``@noqa_rule(code)``; ``<family>_prefilter.py`` declares their
codes. Nothing imports these modules: ``vllm_lint.registry`` finds and loads them by name.
"""
