from vllm import LLM
llm = LLM(model="m", max_model_len=8192)
