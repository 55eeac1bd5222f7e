from vllm import LLM
llm = LLM(model="m", gpu_memory_utilization=0.9)
