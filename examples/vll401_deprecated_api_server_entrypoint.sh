python3 -m vllm.entrypoints.openai.api_server --model m --max-model-len 8192
