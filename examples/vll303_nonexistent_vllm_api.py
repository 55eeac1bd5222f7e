from vllm import LLM, SamplingParams
llm = LLM(model="m", gpu_memory_utilization=0.9, max_model_len=8192)

async def run(prompt: str):
    return await llm.generate_async(prompt, SamplingParams(max_tokens=8))
