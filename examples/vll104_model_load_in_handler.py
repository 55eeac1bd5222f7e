from fastapi import FastAPI
from transformers import pipeline

app = FastAPI()

@app.post("/summarize")
def summarize(text: str):
    pipe = pipeline("summarization")
    return pipe(text)
