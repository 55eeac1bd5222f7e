from vllm.engine.async_llm_engine import AsyncLLMEngine
