"""The agents.toml sidecar: one test per rule, each asserting the message with its file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helikon.cli.registry import Registry
from helikon.cli.sidecar import SidecarError, load_sidecar
from helikon.cli.toml_lines import key_lines, line_of

HELLO = {"default": [[{"type": "token_delta", "text": "Hello!"}, {"type": "finish"}]]}


def write(tmp_path: Path, text: str, files: dict[str, str] | None = None) -> Path:
    for name, content in (files or {}).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    (tmp_path / "hello.json").write_text(json.dumps(HELLO))
    sidecar = tmp_path / "agents.toml"
    sidecar.write_text(text)
    return sidecar


def problems(tmp_path: Path, text: str, files: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(SidecarError) as caught:
        load_sidecar(write(tmp_path, text, files))
    assert str(caught.value) == "\n".join(str(p) for p in caught.value.problems)
    return [str(p) for p in caught.value.problems]


MOCK = 'model = { provider = "mock", script = "hello.json" }'


def test_a_good_sidecar_loads_with_its_files(tmp_path: Path) -> None:
    sidecar = load_sidecar(
        write(
            tmp_path,
            f"""
[agents.zeta]
{MOCK}
[agents.alpha]
description = "first by name"
instructions = {{ file = "prompts/alpha.md" }}
{MOCK}
handoffs = ["zeta"]
""",
            files={"prompts/alpha.md": "Be brief."},
        )
    )
    assert list(sidecar.agents) == ["alpha", "zeta"] and sidecar.default_agent == "alpha"
    assert sidecar.agents["alpha"].instructions == "Be brief."
    assert sidecar.files == {
        tmp_path / "agents.toml",
        tmp_path / "prompts" / "alpha.md",
        tmp_path / "hello.json",
    }


def test_toml_that_does_not_parse_names_its_line(tmp_path: Path) -> None:
    assert problems(tmp_path, f"[agents.a]\n{MOCK}\ntools = [\n") == [
        "agents.toml:4: not valid TOML: Cannot declare ('agents', 'a', 'tools') twice"
    ] or problems(tmp_path, f"[agents.a]\n{MOCK}\ndescription = \n")[0].startswith(
        "agents.toml:3: not valid TOML:"
    )


def test_a_missing_file_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(SidecarError, match=r"agents\.toml: no such file: give --agents PATH, or create one"):
        load_sidecar(tmp_path / "agents.toml")


def test_unknown_keys_are_named_with_their_line(tmp_path: Path) -> None:
    found = problems(tmp_path, f'agent = 1\n[agents.a]\n{MOCK}\ndescripton = "typo"\n')
    assert found == [
        "agents.toml:1: agent: unknown key (known here: agents, tools, eval)",
        "agents.toml:4: agents.a.descripton: unknown key (known "
        "here: description, instructions, model, tools, handoffs)",
    ]


def test_no_agents(tmp_path: Path) -> None:
    assert problems(tmp_path, "# empty\n") == ["agents.toml: declares no agents: add an [agents.NAME] table"]


def test_an_agent_without_a_model(tmp_path: Path) -> None:
    found = problems(tmp_path, '[agents.a]\ndescription = "x"\n')
    assert found == [
        'agents.toml:1: agents.a: no model: add model = "openai:gpt-5-mini" or model = { provider = ... }'
    ]


def test_a_bad_name(tmp_path: Path) -> None:
    assert problems(tmp_path, f'[agents."two words"]\n{MOCK}\n') == [
        "agents.toml:1: agents.two words: a name is 1-64 letters, digits, '_' or '-'"
    ]


def test_an_unknown_provider_and_a_bad_model_string(tmp_path: Path) -> None:
    found = problems(
        tmp_path, '[agents.a]\nmodel = { provider = "openia", id = "x" }\n[agents.b]\nmodel = "gpt-5"\n'
    )
    assert found[0] == (
        "agents.toml:2: agents.a.model.provider: 'openia': "
        "one of openai, anthropic, gemini, bedrock, mock (or a model string)"
    )
    assert found[1].startswith(
        "agents.toml:4: agents.b.model: model='gpt-5': expected a Model or a model string"
    )


def test_a_mock_model_needs_a_readable_script(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        '[agents.a]\nmodel = { provider = "mock" }\n[agents.b]\n'
        'model = { provider = "mock", script = "gone.json" }\n'
        '[agents.c]\nmodel = { provider = "mock", script = "bad.json" }\n',
        files={"bad.json": '{"default": [[{"type": "nope"}]]}'},
    )
    assert found[0] == (
        "agents.toml:2: agents.a.model: a mock model needs s"
        'cript = "<file>.json" (a helikon.testing ScriptFile)'
    )
    assert (
        found[1]
        == f"agents.toml:4: agents.b.model.script: gone.json: no such file (paths are relative to {tmp_path})"
    )
    assert found[2].startswith(
        'agents.toml:6: agents.c.model.script: bad.json: "default"[0][0]: not a model event'
    )


def test_a_missing_instructions_file(tmp_path: Path) -> None:
    found = problems(tmp_path, f'[agents.a]\n{MOCK}\ninstructions = {{ file = "nope.md" }}\n')
    assert found == [
        f"agents.toml:3: agents.a.instructions.file: nope.md: no such file (paths are relative to {tmp_path})"
    ]


def test_dangling_tool_and_handoff_references(tmp_path: Path) -> None:
    found = problems(tmp_path, f'[agents.a]\n{MOCK}\ntools = ["lookup"]\nhandoffs = ["b", "a"]\n')
    assert found == [
        "agents.toml:3: agents.a.tools[0]: no tool 'lookup' is declared (none is declared)",
        "agents.toml:4: agents.a.handoffs[0]: no agent 'b' is declared (declared: a)",
        "agents.toml:4: agents.a.handoffs[1]: an agent cannot hand off to itself",
    ]


def test_a_handoff_cycle_is_rejected_once(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        f'[agents.c]\n{MOCK}\nhandoffs = ["a"]\n[agents.a]\n{MOCK}\n'
        f'handoffs = ["b"]\n[agents.b]\n{MOCK}\nhandoffs = ["c"]\n',
    )
    assert found == [
        "agents.toml:6: agents.a.handoffs: "
        "handoff cycle detected (a -> b -> c -> a): declare one-way handoff chains"
    ]


def test_a_tool_needs_exactly_one_of_script_and_inline(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        f'[agents.a]\n{MOCK}\n[tools.none]\ndescription = "x"\n'
        '[tools.both]\nscript = "t.lua"\ninline = "x"\n',
    )
    assert found == [
        "agents.toml:3: tools.none: give exactly one of script = \"<file>.lua\" and inline = '''<lua>'''",
        "agents.toml:5: tools.both: give exactly one of script = \"<file>.lua\" and inline = '''<lua>'''",
    ]


def test_bad_params_schemas(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        f'[agents.a]\n{MOCK}\n[tools.t]\ninline = "function run(a) return 1 end"\n'
        'params = { type = "object", properties = { n = { type = 12 } } }\n'
        '[tools.u]\ninline = "function run(a) return 1 end"\nparams = { type = "string" }\n',
    )
    assert found[0].startswith(
        "agents.toml:5: tools.t.params.properties.n.type: not a valid JSON Schema: 12 is not valid"
    )
    assert found[1] == (
        'agents.toml:8: tools.u.params: the arguments are an object: give type = "object" and its properties'
    )


def test_eval_settings(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        f'[agents.a]\n{MOCK}\n[eval]\nevaluators = ["exact_match", "bleu", "json_schema"]\n'
        '[eval.tool_trajectory]\norder = "sideways"\n',
    )
    assert found == [
        'agents.toml:3: eval.json_schema: json_schema needs [eval.json_schema] with schema = "<file>.json"',
        "agents.toml:4: eval.evaluators[1]: 'bleu': "
        "one of exact_match, tool_trajectory, json_schema, llm_judge",
        "agents.toml:6: eval.tool_trajectory.order: one of exact, in_order, any_order",
    ]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    found = problems(tmp_path, f'[agents.a]\n{MOCK}\ntools = ["x"]\n[agents.b]\nmodel = 3\n')
    assert found == [
        "agents.toml:3: agents.a.tools[0]: no tool 'x' is declared (none is declared)",
        "agents.toml:5: agents.b.model: expected a model string or a table, not a number",
    ]


# --- keys and the registry -------------------------------------------------------------------


def test_a_missing_key_disables_only_the_agents_that_need_it(tmp_path: Path) -> None:
    sidecar = write(
        tmp_path,
        f'[agents.local]\n{MOCK}\n[agents.cloud]\nmodel = "anthropic:claude-sonnet-4-6"\n'
        '[agents.router]\nmodel = { provider = "mock", script = "hello.json" }\nhandoffs = ["cloud"]\n'
        '[agents.gem]\nmodel = { provider = "gemini", id = "gemini-2.5-flash" }\n',
    )
    registry = Registry.load(sidecar, env={"GOOGLE_API_KEY": "k"})
    assert registry.names() == ["gem", "local"]
    assert registry.disabled == {
        "cloud": "its model anthropic:claude-sonnet-4-6 needs ANTHROPIC_API_KEY: set it to use this agent",
        "router": "it hands off to 'cloud', which is disabled",
    }
    assert registry.agent("local").run_sync("hi").final_output == "Hello!"
    with pytest.raises(Exception, match=r"agent 'cloud' is disabled: .*ANTHROPIC_API_KEY"):
        registry.agent("cloud")
    assert Registry.load(sidecar, env={"ANTHROPIC_API_KEY": "k"}).names() == ["cloud", "local", "router"]


def test_with_every_agent_disabled_the_default_says_why(tmp_path: Path) -> None:
    registry = Registry.load(write(tmp_path, '[agents.a]\nmodel = "openai:gpt-5-mini"\n'), env={})
    with pytest.raises(Exception, match=r"no agent in agents\.toml can run here: a: .*OPENAI_API_KEY"):
        registry.default()


def test_a_mock_model_goes_on_across_turns_but_a_case_starts_afresh(tmp_path: Path) -> None:
    scripts = {
        "default": [[{"type": "token_delta", "text": t}, {"type": "finish"}] for t in ("one", "two")],
        "cases": {"c1": [[{"type": "token_delta", "text": "case"}, {"type": "finish"}]]},
    }
    (tmp_path / "s.json").write_text(json.dumps(scripts))
    sidecar = tmp_path / "agents.toml"
    sidecar.write_text('[agents.a]\nmodel = { provider = "mock", script = "s.json" }\n')
    registry = Registry.load(sidecar)
    assert [registry.agent("a").run_sync("x").final_output for _ in range(2)] == ["one", "two"]
    assert registry.agent("a", case_id="c1").run_sync("x").final_output == "case"
    assert Registry.load(sidecar).agent("a").run_sync("x").final_output == "one"  # a reload starts again


# --- where keys are written ------------------------------------------------------------------


def test_key_lines_skip_strings_arrays_and_comments() -> None:
    text = '''# [not.a.table]
[agents."quoted name"]
model = { provider = "mock", script = "x" }  # a comment with ] and {
instructions = """
tools = ["inside a string"]
"""
tools = [
  "a", # ]
  "b",
]
handoffs = ['literal ]']
[tools.t]
inline = \'\'\'
params = {}
\'\'\'
params.type = "object"
'''
    lines = key_lines(text)
    assert line_of(lines, ("agents", "quoted name", "model", "provider")) == 3
    assert line_of(lines, ("agents", "quoted name", "instructions")) == 4
    assert line_of(lines, ("agents", "quoted name", "tools", 1)) == 7
    assert line_of(lines, ("agents", "quoted name", "handoffs")) == 11
    assert line_of(lines, ("tools", "t", "inline")) == 13
    assert line_of(lines, ("tools", "t", "params", "type")) == 16
    assert ("not", "a", "table") not in lines and line_of(lines, ("eval",)) is None


# --- the shipped JSON Schema -----------------------------------------------------------------


def test_the_json_schema_accepts_the_starter_and_refuses_what_the_loader_refuses() -> None:
    import tomllib

    from jsonschema import Draft202012Validator

    from helikon.cli.init_command import STARTER

    schema = json.loads((Path(__file__).parents[2] / "src/helikon/cli/agents.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    starter = tomllib.loads((STARTER / "agents.toml").read_text())
    assert not list(validator.iter_errors(starter))
    for bad in (
        {"agents": {"a": {"model": "openai:x", "descripton": "typo"}}},
        {"agents": {"a": {"model": {"provider": "mock"}}}},
        {"agents": {"a": {"model": "gpt-5"}}},
        {"agents": {"a": {"model": "openai:x"}}, "tools": {"t": {"script": "a.lua", "inline": "x"}}},
        {"agents": {}},
    ):
        assert list(validator.iter_errors(bad)), bad


def test_needs_approval_is_a_boolean(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        f'[agents.a]\n{MOCK}\n[tools.t]\ninline = "function run(a) return 1 end"\nneeds_approval = "yes"\n',
    )
    assert found == ["agents.toml:5: tools.t.needs_approval: expected true or false, not a string"]
