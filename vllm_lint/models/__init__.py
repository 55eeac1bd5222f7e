"""What vLLM reads from a model before it loads any weight: its ``config.json`` facts (``facts.py``), where
they are found for the model a launch names (``lookup.py``: a local folder, the Hugging Face cache, the table
shipped with vllm-lint, the Hub when asked), and what vLLM derives from them in each release (``derive.py``).

A model none of those sources knows is never guessed: the rules that need its facts stay silent."""
