"""The command-line library: what every surface that reads vLLM command lines shares.

Shell words with their positions in the file (``shell``), words for a program's arguments written in code
(``argv``), vLLM's ``vllm serve`` argument parser emulated from the API snapshot (``serve_args``), finding vLLM
launches among commands and building their launch records (``launches``), and turning a launch finding's fix
into text edits of those words (``fix_edits``). It sits below both the file surfaces and the Python front-end,
and imports neither.
"""
