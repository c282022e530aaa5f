"""agentmem inside agent frameworks, each optional (its framework is an extra, imported only when used), each on the
public SDK alone (``agentmem.client``): ``agentmem.integrations.langgraph.AgentmemStore`` (``agentmem[langgraph]``)."""
