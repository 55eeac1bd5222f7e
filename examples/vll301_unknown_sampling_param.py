from vllm import SamplingParams
params = SamplingParams(temperature=0.7, max_new_tokens=256)
