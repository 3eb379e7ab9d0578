"""What every room uses: one error hierarchy, one console, atomic files, YAML with lines, JSON text, quantities, names."""
