from fastapi import FastAPI
from transformers import pipeline

app = FastAPI()
pipe = pipeline("text-generation", model="meta-llama/Llama-3.1-8B-Instruct")

@app.post("/chat")
def chat(prompt: str):
    output = pipe(prompt, max_new_tokens=256)
    return output[0]["generated_text"]
