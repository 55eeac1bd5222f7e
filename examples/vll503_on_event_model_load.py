from fastapi import FastAPI
from vllm import AsyncEngineArgs, AsyncLLMEngine

app = FastAPI()
engine = None

@app.on_event("startup")
async def startup():
    global engine
    engine = AsyncLLMEngine.from_engine_args(
        AsyncEngineArgs(model="m", gpu_memory_utilization=0.9, max_model_len=8192)
    )
