"""Rules decided across files: each file's lint also reports facts about it (the vLLM servers it starts, the
requests its clients send), kept with its cached result; after every file of a run is linted, the project
rules join those facts (``vllm_lint.engine.project``)."""
