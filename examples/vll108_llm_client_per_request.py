from fastapi import FastAPI
from openai import AsyncOpenAI

app = FastAPI()

@app.post("/ask")
async def ask(question: str):
    client = AsyncOpenAI(base_url="http://vllm:8000/v1", api_key="k")
    reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": question}])
    return {"answer": reply.choices[0].message.content}
