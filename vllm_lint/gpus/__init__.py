"""GPU types (``table.py``: memory, compute capability) and the names deployments give them (``names.py``)."""
