from vllm import LLM
llm = LLM(model="m", trust_remote_code=True, max_model_len=8192)
