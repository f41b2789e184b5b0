"""The PostgreSQL fixture and the `distributed` extra's versions work together: the checkpointer
sets up its tables, a graph checkpoints into them, and another connection reads the result."""

from __future__ import annotations

import operator
import sys
from typing import Annotated, TypedDict

import psycopg
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, StateGraph
from psycopg.rows import dict_row

from tests.services import Postgres, run_in_loopback_namespace


class Tally(TypedDict):
    seen: Annotated[list[str], operator.add]


def count(state: Tally) -> dict[str, list[str]]:
    return {"seen": [f"step {len(state['seen'])}"]}


def tally_graph(saver: PostgresSaver):
    builder = StateGraph(Tally)
    builder.add_node("count", count)
    builder.add_edge(START, "count")
    builder.add_edge("count", END)
    return builder.compile(checkpointer=saver)


def test_the_cluster_answers_on_loopback(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as conn:
        database, address = conn.execute("select current_database(), inet_server_addr()").fetchone()
    assert (database, str(address)) == ("cq2a_test", "127.0.0.1")


def test_a_checkpoint_written_through_one_connection_is_read_through_another(
    postgres_url: str,
) -> None:
    config = {"configurable": {"thread_id": "context-7"}}
    with PostgresSaver.from_conn_string(postgres_url) as saver:
        saver.setup()
        graph = tally_graph(saver)
        graph.invoke({"seen": ["start"]}, config)
        graph.invoke({"seen": ["again"]}, config)

    with psycopg.connect(postgres_url, autocommit=True, row_factory=dict_row) as conn:
        state = tally_graph(PostgresSaver(conn)).get_state(config)
        rows = conn.execute(
            "select count(*) as n from checkpoints where thread_id = %s", ("context-7",)
        ).fetchone()
    assert state.values["seen"] == ["start", "step 1", "again", "step 3"]
    assert rows["n"] >= 4


def test_the_socket_reaches_the_cluster_from_a_loopback_namespace(postgres: Postgres) -> None:
    """Ray scenarios run in a namespace of their own; the cluster's unix socket is their way in,
    since its 127.0.0.1 is not theirs."""
    probe = (
        "import sys, psycopg\n"
        "for url in sys.argv[1:]:\n"
        "    try:\n"
        "        print(psycopg.connect(url, connect_timeout=3).execute('select 7').fetchone()[0])\n"
        "    except psycopg.OperationalError:\n"
        "        print('unreachable')\n"
    )
    done = run_in_loopback_namespace(
        [sys.executable, "-c", probe, postgres.socket_url, postgres.url], timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["7", "unreachable"]
