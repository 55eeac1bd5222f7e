"""The Python rules: checkers of one parsed module (``PyContext`` in, ``PyFinding`` out), one module per family.

``<family>.py`` holds the checkers, each marked ``@python_rule(code)``; ``<family>_prefilter.py`` the byte
conditions under which each of its codes can fire. Nothing imports these modules: ``vllm_lint.registry``
finds and loads them by name.
"""
