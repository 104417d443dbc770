"""`python -m ptysup`."""

from ptysup.cli import entry

entry()
