"""`python -m ftharness ...` is the `ftharness` command."""

from ftharness.harness.frontends.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
