"""A LangGraph agent that remembers across threads through graphsvc (GraphsvcStore).

Two conversations (threads) with one user. In the first, the user tells the agent something worth
keeping; the agent writes it to its long-term store. The second thread starts with no history
(the checkpointer keeps threads apart), yet the agent answers from memory: before each reply it
searches the store with the user's message, graphsvc ranks what it holds, and the memories go into
the system prompt. The script prints what was recalled in the second thread and graphsvc's bundle
for the same question (the ranking the store's search read, with graphsvc's account of what memory
does not cover).

The chat model is langchain_core's fake one (scripted replies, no network): what this shows is
what memory put into the model's prompt, not the reply.

Run against a graphsvc server (pip install -e ".[dev]" -e integrations/langchain):

    graphsvc serve --data-dir /tmp/gs-example --create &
    python examples/langgraph_memory.py --url http://127.0.0.1:8000/graphql

With API keys, pass a write key with --api-key.
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.base import BaseStore

from graphsvc.client import GraphsvcClient
from graphsvc_langchain import GraphsvcStore

REMEMBER = "remember:"
# The agent's memories of a user live under this LangGraph namespace (graphsvc tags).
MEMORIES = "memories"


class Agent:
    """A one-node graph: recall, maybe remember, reply. It keeps what its prompts held."""

    def __init__(self, store: BaseStore, replies: list[str]) -> None:
        self.model = FakeListChatModel(responses=replies)
        self.prompts: list[list[AnyMessage]] = []
        self.recalled: list[str] = []
        graph = StateGraph(MessagesState)
        graph.add_node("reply", self.reply)
        graph.add_edge(START, "reply")
        self.graph = graph.compile(checkpointer=InMemorySaver(), store=store)

    def reply(
        self, state: MessagesState, config: RunnableConfig, *, store: BaseStore
    ) -> dict[str, Any]:
        user = config["configurable"]["user_id"]
        said = str(state["messages"][-1].content)
        namespace = (MEMORIES, user)
        found = store.search(namespace, query=said, limit=3)
        self.recalled = [item.value["memory"] for item in found]
        if said.lower().startswith(REMEMBER):
            fact = said[len(REMEMBER) :].strip()
            key = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{user}/{fact}"))
            store.put(namespace, key, {"memory": fact})
        memory = "\n".join(f"- {text}" for text in self.recalled) or "(nothing)"
        prompt = [
            SystemMessage(f"You are a helpful assistant. What you remember of the user:\n{memory}"),
            *state["messages"],
        ]
        self.prompts.append(prompt)
        return {"messages": [self.model.invoke(prompt)]}

    def say(self, thread: str, user: str, text: str) -> str:
        config: RunnableConfig = {"configurable": {"thread_id": thread, "user_id": user}}
        result = self.graph.invoke({"messages": [HumanMessage(text)]}, config)
        return str(result["messages"][-1].content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000/graphql")
    parser.add_argument("--api-key", help="a write key, when the server has keys")
    parser.add_argument("--user", default="ada")
    args = parser.parse_args()

    store = GraphsvcStore(args.url, api_key=args.api_key)
    agent = Agent(
        store,
        replies=[
            "Noted: green tea in the morning, no coffee after noon.",
            "Green tea, in the morning.",
        ],
    )

    print("== thread 1")
    said = "Remember: I drink green tea every morning and no coffee after noon."
    print(f"user:  {said}")
    print(f"agent: {agent.say('thread-1', args.user, said)}")

    print("\n== thread 2 (a new thread: no history of thread 1)")
    question = "What should I drink tomorrow morning?"
    print(f"user:  {question}")
    answer = agent.say("thread-2", args.user, question)
    print("recalled from graphsvc:")
    for text in agent.recalled:
        print(f"  - {text}")
    print(f"agent: {answer}")

    print("\n== the system prompt the model got in thread 2")
    print(agent.prompts[-1][0].content)

    print("\n== graphsvc's bundle for the thread-2 question (what the store's search ranked)")
    with GraphsvcClient(args.url, api_key=args.api_key) as client:
        bundle = client.bundle(question, min_score=store.min_score)
    for capsule in bundle.capsules:
        print(f"  [{capsule.score:.3f}] {capsule.text}")
    print(
        f"  topScore {bundle.top_score}, evidenceCoverage {bundle.evidence_coverage}, "
        f"skipped {bundle.skipped}, uncoveredWords {list(bundle.uncovered_words)}"
    )


if __name__ == "__main__":
    main()
