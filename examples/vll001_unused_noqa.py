from vllm import LLM

llm = LLM(model="m", gpu_memory_utilization=0.9, max_model_len=8192)  # noqa: VLL999
