import streamlit as st
from transformers import pipeline

st.title("Chat")
generator = pipeline("text-generation", model="gpt2")
prompt = st.text_input("Prompt")
if prompt:
    st.write(generator(prompt, max_new_tokens=64)[0]["generated_text"])
