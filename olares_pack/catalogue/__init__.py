"""The repository: its layout and lock, release records, the ledger, transactions, checks, releases, build."""

MANIFEST_FILE = "app.yaml"  # an app's manifest, in apps/<name>/ (here: read without the repository's modules)

# How long a writer waits for the repository's lock (catalogue/lock.py); here, so that the CLI's
# option defaults read it without loading the repository's modules.
DEFAULT_LOCK_TIMEOUT = 300.0
