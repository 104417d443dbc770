"""`python -m ptysup`."""

from ptysup.cli.commandline import entry

entry()
