from vllm import LLM
llm = LLM(model="m", gpu_memory_utilisation=0.9, max_model_len=8192)
