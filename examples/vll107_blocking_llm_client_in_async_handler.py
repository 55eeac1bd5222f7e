from fastapi import FastAPI
from openai import OpenAI

app = FastAPI()
client = OpenAI(base_url="http://vllm:8000/v1", api_key="k")

@app.post("/ask")
async def ask(question: str):
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": question}])
    return {"answer": reply.choices[0].message.content}
