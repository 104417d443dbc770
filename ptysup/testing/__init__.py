"""What the tests, the demo and CI run against: the pinned agents and a fake model.

kit installs each agent's pinned release (pins; lanes: the compatibility lane's and the
newest releases) and gives it a private, offline environment, from what each agent's
folder says of it (ptysup/agents/<name>/testkit.py, through the registry);
fakemodel (with wire, conversation, scenario and player) serves the Anthropic Messages API
on 127.0.0.1 from the scenarios/ files; demo runs ptysup on a sample project offline.
It may import the store, supervisor and the shared modules, never the run or the command
line; nothing of a real run imports it (only engines' CI setup and the tests).
"""
