"""``python -m agentmem.cli``: the same as the ``agentmem`` command."""

from agentmem.cli import main

main()
