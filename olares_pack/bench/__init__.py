"""Performance: measure a running engine (`bench`), keep the runs per chart version
(apps/<name>/bench/<version>.json), compare versions (`history`) and show them (table, picture,
the market page's "Performance on <device>" section)."""
