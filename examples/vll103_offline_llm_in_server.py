from fastapi import FastAPI
from vllm import LLM, SamplingParams

app = FastAPI()
llm = LLM(model="m", gpu_memory_utilization=0.9, max_model_len=8192)

@app.post("/generate")
def generate(prompt: str):
    return llm.generate([prompt], SamplingParams(max_tokens=64))[0].outputs[0].text
