"""What lives off this machine: Hugging Face (huggingface_hub) and OCI registries."""
