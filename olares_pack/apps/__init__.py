"""The app manifest (apps/<name>/app.yaml): models, field discipline, loading, changelog; `new` and `pin`, which write one."""
