"""The app manifest (apps/<name>/app.yaml): models, loading and `auto` values, changelog entries; `new` and `pin`, which write one."""
