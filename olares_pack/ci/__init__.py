"""The pull-request gate and the GitHub workflow: `check` (every check of a catalogue in one exit
code, findings placed on the lines a reviewer reads) and `init --ci github` (the workflow that
runs it on pull requests, publishes main and watches upstream nightly)."""
