"""App manifests into chart files: the templates, the llmbase pattern, imported charts, the template generation."""
