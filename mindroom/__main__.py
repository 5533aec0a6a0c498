"""`python -m mindroom`: the same as the `mindroom` command."""

from mindroom.cli import main

main()
