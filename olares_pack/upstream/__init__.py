"""Watching upstream: what a newer engine image, model revision or engine build would change in an
app (`outdated`), and the next version drafted from it (`propose`)."""
