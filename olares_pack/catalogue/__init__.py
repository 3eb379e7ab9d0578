"""The repository: its layout and lock, release records, the ledger, transactions, checks, releases, build."""
