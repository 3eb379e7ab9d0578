"""Hand-written charts into apps: find, plan, structured (typed) import, legacy upgrade."""
