from fastapi import FastAPI
from vllm import AsyncEngineArgs, AsyncLLMEngine, SamplingParams

app = FastAPI()
engine = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model="m", gpu_memory_utilization=0.90, max_model_len=8192))

@app.post("/generate")
async def generate(prompt: str):
    params = SamplingParams(max_tokens=256)
    async for output in engine.generate(prompt, params, request_id="generate"):
        final = output
    return {"text": final.outputs[0].text}
