docker run --gpus all -p 8000:8000 vllm/vllm-openai:latest m --tensor-parallel-size 2
