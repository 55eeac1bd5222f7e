docker run --gpus all -p 8000:8000 vllm/vllm-openai:v0.32.0 m --tensor-parallel-size 2
