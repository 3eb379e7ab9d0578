"""What every room uses: one error hierarchy and the exit codes, one console, atomic files, YAML with lines, the field discipline every input passes, JSON text, quantities, names."""
