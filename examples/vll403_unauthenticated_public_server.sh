vllm serve m --host 0.0.0.0 --port 8000
