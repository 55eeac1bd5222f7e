"""The rules over the launch record (``vllm_lint.launch.record``), written once for every surface, one module per family.

``<family>.py`` holds the checkers, each marked ``@launch_rule(code)``; ``<family>_prefilter.py`` declares its codes
(a launch rule's pre-filter condition is ``LAUNCH``: each surface's launch extractor has its own byte test).
Nothing imports these modules: ``vllm_lint.registry`` finds and loads them by name.
"""
