import uuid
from fastapi import FastAPI
from vllm import AsyncEngineArgs, AsyncLLMEngine, SamplingParams

app = FastAPI()
engine = AsyncLLMEngine.from_engine_args(
    AsyncEngineArgs(model="m", gpu_memory_utilization=0.9, max_model_len=8192)
)

@app.post("/generate")
async def generate(prompt: str, max_tokens: int = 256):
    params = SamplingParams(temperature=0.7)
    async for out in engine.generate(prompt, params, uuid.uuid4().hex):
        final = out
    return final.outputs[0].text
