import uvicorn
from fastapi import FastAPI
from transformers import pipeline

app = FastAPI()
pipe = pipeline("text-generation", model="gpt2")

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=8000, workers=4)
