"""agentmem inside agent frameworks: each module plugs memory into one framework, imported only when used."""
