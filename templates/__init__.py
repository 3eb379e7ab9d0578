"""Jinja templates of the chart files (shipped inside the package as olares_pack.templates)."""
