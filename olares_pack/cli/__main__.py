"""`python -m olares_pack.cli`."""

from olares_pack.cli import main

main()
