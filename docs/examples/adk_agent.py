"""An ADK agent with memlab's event memory (PreloadMemoryTool, load_memory) and facts block; no model is called
until the agent runs. docs/howto/adk-agent.md shows it; `pip install 'memlab[adk]'`, then `python adk_agent.py`."""

# --8<-- [start:agent]
import memlab
from memlab.adk import EventMemoryService, preload_facts_callback
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import load_memory_tool, preload_memory_tool

store, embedder = memlab.open_store(), memlab.default_embedder()
facts = memlab.FactMemory(store, embedder, extractor=memlab.RuleExtractor())
agent = LlmAgent(name="ops", model="gemini-2.5-flash", instruction="Help with deployments.",
                 tools=[preload_memory_tool.PreloadMemoryTool(), load_memory_tool.load_memory_tool],
                 before_model_callback=preload_facts_callback(facts))
runner = Runner(app_name="deploy-bot", agent=agent, session_service=InMemorySessionService(),
                memory_service=EventMemoryService(memlab.EventMemory(store, embedder)))
# when a session ends: await runner.memory_service.add_session_to_memory(session)
# --8<-- [end:agent]

print(f"{runner.app_name}: agent {agent.name} with {[type(t).__name__ for t in agent.tools]}, memory "
      f"{type(runner.memory_service).__name__}")
