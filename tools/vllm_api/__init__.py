"""Building vllm-lint's database of vLLM's API (``vllm_lint/vllm_api/data/``).

``refresh.py`` is the one command: it downloads released vLLM wheels, reads each
statically (``static_read.py``) and merges the readings into the database
(``database.py``). ``introspect.py`` reads one installed vLLM by importing it,
the cross-check of the static reading (``compare.py``).
"""
