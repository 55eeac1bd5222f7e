from fastapi import FastAPI

app = FastAPI()
model = None

@app.post("/generate")
async def generate(prompt: str):
    if model is None:
        return {"error": "Model not loaded yet"}, 503
    return {"text": prompt}
