"""olares-pack: typed app manifests for GPU LLM servers, rendered into Olares app charts."""

__version__ = "0.1.0"
