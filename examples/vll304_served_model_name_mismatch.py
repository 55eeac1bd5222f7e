import subprocess
from openai import OpenAI

server = subprocess.Popen(["vllm", "serve", "Qwen/Qwen3-8B", "--served-model-name", "qwen3", "--port", "8123"])
client = OpenAI(base_url="http://localhost:8123/v1", api_key="k")
reply = client.chat.completions.create(model="Qwen/Qwen3-8B", messages=[{"role": "user", "content": "Hi"}])
