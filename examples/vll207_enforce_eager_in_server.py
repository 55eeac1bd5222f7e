from fastapi import FastAPI
from vllm import AsyncEngineArgs, AsyncLLMEngine

app = FastAPI()
engine = AsyncLLMEngine.from_engine_args(
    AsyncEngineArgs(model="m", gpu_memory_utilization=0.90, max_model_len=8192, enforce_eager=True)
)
