"""A writer process for the session conformance suite: `python -m helikon.testing._conformance_worker SPEC`.

SPEC is JSON: `opener` ("module:function"), `kwargs`, `session_id`, `action` and its arguments.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from typing import Any

from helikon.core.items import TextPart
from helikon.core.session import Session, UserMessageEvent


async def _open(spec: dict[str, Any]) -> Session:
    module_name, _, function_name = str(spec["opener"]).partition(":")
    opener = getattr(importlib.import_module(module_name), function_name)
    return await opener(spec["session_id"], **spec.get("kwargs", {}))


def _user(text: str) -> UserMessageEvent:
    return UserMessageEvent(content=(TextPart(text=text),))


async def main(spec: dict[str, Any]) -> None:
    session = await _open(spec)
    try:
        action = spec["action"]
        if action == "append":
            for n in range(int(spec["count"])):
                await session.append([_user(f"{spec['tag']}:{n}")])
        elif action == "append_with_ids":
            # Every process appends the same batches with the same ids, as retries would.
            for n in range(int(spec["count"])):
                event_id = f"{spec['session_id']}:{spec['tag']}:{n}"
                await session.append([_user(f"{spec['tag']}:{n}")], ids=[event_id])
        elif action == "batches_forever":
            size, number = int(spec["size"]), 0
            while True:
                await session.append([_user(f"b{number}:{i}") for i in range(size)])
                print(number, flush=True)  # the parent kills us once it has seen a few
                number += 1
        elif action == "runner_turn":
            from helikon.core.agent import LlmAgent
            from helikon.core.context import RunContext
            from helikon.runtime import AsyncioRunner
            from helikon.testing import MockModel, text_turn

            model = MockModel.with_scripts([text_turn("resumed")])
            agent = LlmAgent[None](name="resumer", model=model)
            await AsyncioRunner[None]().run(
                agent, spec["input"], RunContext.ephemeral(None).with_session(session)
            )
            seen = [f"{m.type}:{getattr(m, 'text', '')}" for m in model.requests[0].messages]
            print(json.dumps(seen))
        elif action == "run_until_killed":
            # A durable run whose tool never returns: the parent kills us while it runs.
            from helikon.core.agent import LlmAgent
            from helikon.core.context import RunContext
            from helikon.core.tools import tool
            from helikon.runtime import AsyncioRunner
            from helikon.testing import MockModel, tool_call_turn

            @tool
            async def pay(invoice: int) -> str:
                """Pay an invoice."""
                print("started", flush=True)
                await asyncio.Event().wait()  # until SIGKILL
                return "paid"

            model = MockModel.with_scripts([tool_call_turn("pay", {"invoice": 7}, call_id="pay-1")])
            agent = LlmAgent[None](name="payer", model=model, tools=[pay])
            await AsyncioRunner[None]().run(
                agent, "pay invoice 7", RunContext.ephemeral(None).with_session(session)
            )
        elif action == "parallel_run_until_killed":
            # Two calls in one batch: `charge` returns at once, `pay` never does. The parent
            # kills us once the log holds charge's result.
            from helikon.core.agent import LlmAgent
            from helikon.core.context import RunContext
            from helikon.core.tools import tool
            from helikon.runtime import AsyncioRunner
            from helikon.testing import MockModel, tool_calls_turn

            @tool
            async def pay(invoice: int) -> str:
                """Pay an invoice."""
                print("started", flush=True)
                await asyncio.Event().wait()  # until SIGKILL
                return "paid"

            @tool
            async def charge(card: str) -> str:
                """Charge a card."""
                return f"charged {card}"

            turn = tool_calls_turn(
                [("pay", {"invoice": 7}), ("charge", {"card": "4242"})], call_ids=["pay-1", "charge-1"]
            )
            model = MockModel.with_scripts([turn])
            agent = LlmAgent[None](name="payer", model=model, tools=[pay, charge])
            await AsyncioRunner[None]().run(
                agent, "pay and charge", RunContext.ephemeral(None).with_session(session)
            )
        elif action in ("pause_for_approval", "resume_approvals", "resume_until_killed"):
            from ._approval_checks import worker_action

            print(await worker_action(session, spec), flush=True)
        else:
            raise SystemExit(f"unknown action {action!r}")
    finally:
        aclose = getattr(session, "aclose", None)
        if aclose is not None:
            await aclose()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
