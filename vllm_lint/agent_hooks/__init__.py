"""``vllm-lint hook AGENT``: lint the file an assistant just edited and answer in that assistant's protocol.

``protocols`` (each assistant's payload and answer: which files, which exit code, which stream),
``report`` (lint the edited files; findings phrased for a model), ``main`` (the command, without click:
it runs after every edit an agent makes, so it stays small). Installing the hooks is ``vllm-lint init
--hooks`` (``agent_rules/targets.yaml``).
"""
