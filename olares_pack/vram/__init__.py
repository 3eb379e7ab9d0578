"""GPU memory: the llama-server estimate term by term, its fitted constants, an app's budget, GGUF headers."""
