"""agentmem inside agent frameworks, each optional (its framework is an extra, imported only when used), each on the
public SDK alone (``agentmem.client``): LangGraph's store (``langgraph``), the OpenAI Agents SDK's session and
tools (``openai_agents``), Strands' session repository and tools (``strands``), Google ADK's memory service
(``adk``) and LangChain's chat message history (``langchain``)."""
