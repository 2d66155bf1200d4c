"""The scripts as files (render/scripts/) and their one templating mechanism (render/script_files.py).

Every entry script is linted as written, independent of any stack: bash with shellcheck, PowerShell with
tree-sitter-powershell, each with its includes expanded and its inputs set to placeholders. Every shared
fragment is linted on its own too (the variables it reads are its includers' inputs) and must be used.
The rendered scripts, with real values, are linted again by each renderer's tests."""
from __future__ import annotations

import re

import pytest

from render import script_files
from render.script_files import SCRIPTS_DIR, entry_scripts, fragments, lint_form, render_script
from tests.validators import powershell_errors, shellcheck, shellcheck_equivalent, shellcheck_fragment

BASH = [name for name in entry_scripts() if name.endswith(".sh")]
POWERSHELL = [name for name in entry_scripts() if name.endswith(".ps1")]


def test_there_are_scripts_of_both_kinds():
    assert len(BASH) >= 3 and fragments()


@pytest.mark.parametrize("name", BASH)
def test_bash_script_passes_shellcheck_as_written(name, tmp_path):
    path = tmp_path / name
    path.write_text(lint_form(name))
    shellcheck(path)


def test_only_plain_values_of_input_assignments_are_left_out_of_what_shellcheck_must_read_again():
    """tests/validators.py shellcheck_equivalent, which lets the synth test check one script per text: values of names
    and addresses, single or in a list, are one placeholder; a value bash or shellcheck could read otherwise (white
    space, $, a glob, a brace, a tilde, a quote), a list of another length, and everything outside the assignments
    keep their text."""
    one = "NODE='hk-cp-1'\nADDRESSES=('10.30.30.11' 'https://h:6443/')\necho 'hk-cp-1'\n"
    two = "NODE='hk-lnx-4'\nADDRESSES=('10.30.30.24' 'https://g:6443/')\necho 'hk-cp-1'\n"
    assert shellcheck_equivalent(one) == shellcheck_equivalent(two) != one
    for kept in ("NODE='a b'", "NODE='$HOME'", "NODE='*'", "NODE='{a,b}'", "NODE='~'", "NODE=''\"'\"''",
                 "  NODE='indented'", "echo 'hk-cp-1'"):
        assert shellcheck_equivalent(kept) == kept, kept
    assert shellcheck_equivalent("A=('x' 'y')") != shellcheck_equivalent("A=('x')")


@pytest.mark.parametrize("name", POWERSHELL)
def test_powershell_script_parses_as_written(name):
    assert powershell_errors(lint_form(name)) == []


@pytest.mark.parametrize("name", [f for f in fragments() if f.endswith(".sh")])
def test_bash_fragment_passes_shellcheck_alone(name):
    shellcheck_fragment(SCRIPTS_DIR / name)


@pytest.mark.parametrize("name", [f for f in fragments() if f.endswith(".ps1")])
def test_powershell_fragment_parses_alone(name):
    assert powershell_errors((SCRIPTS_DIR / name).read_text()) == []


def test_every_fragment_is_included_and_every_script_rendered_by_some_renderer():
    included = set()
    for name in entry_scripts() + fragments():
        included |= set(re.findall(r"^[ \t]*#@ include (\S+)$", (SCRIPTS_DIR / name).read_text(), re.M))
    assert set(fragments()) <= included, set(fragments()) - included
    sources = "\n".join(path.read_text() for path in (SCRIPTS_DIR.parent).glob("*.py"))
    unused = [name for name in entry_scripts() if f'"{name}"' not in sources]
    assert unused == [], f"scripts no renderer uses: {unused}"


def test_scripts_carry_no_other_templating():
    """One mechanism: no Python format fields, no ad-hoc placeholders in any script file."""
    for name in entry_scripts() + fragments():
        text = (SCRIPTS_DIR / name).read_text()
        assert not re.search(r"(?<![$])\{[a-z_][a-z0-9_]*\}", text), name   # str.format / f-string residue
        assert "@@" not in text, name   # placeholders are inputs, like every other value
        directives = re.findall(r"^[ \t]*#@ (\S+)", text, re.M)
        assert set(directives) <= {"include", "inputs"}, name
        assert directives.count("inputs") <= (0 if name.startswith("lib/") else 1), name


# --- the mechanism itself ---------------------------------------------------------------------------

@pytest.fixture
def scratch(tmp_path, monkeypatch):
    (tmp_path / "lib").mkdir()
    monkeypatch.setattr(script_files, "SCRIPTS_DIR", tmp_path)
    return tmp_path


def test_inputs_are_quoted_for_each_language(scratch):
    (scratch / "a.sh").write_text("#@ inputs NAME COUNT FLAG ITEMS[]\necho \"$NAME\"\n")
    (scratch / "a.ps1").write_text("#@ inputs Name Count Flag Items[] Text\n$Name\n")
    bash = render_script("a.sh", NAME="it's $(rm -rf /)", COUNT=3, FLAG=False, ITEMS=["a b", "c"])
    assert bash.splitlines()[:5] == ["# shellcheck disable=SC2016 # literal text, not expanded here",
                                     "NAME='it'\"'\"'s $(rm -rf /)'", "COUNT=3", "FLAG=false", "ITEMS=('a b' 'c')"]
    ps = render_script("a.ps1", Name="it’s $x", Count=3, Flag=True, Items=["a", "b'c"], Text="one\ntwo")
    assert ps.splitlines()[:5] == ["$Name = 'it’’s $x'", "$Count = 3", "$Flag = $true",
                                   "$Items = @('a', 'b''c')", "$Text = (@('one', 'two') -join \"`n\")"]


def test_inputs_must_match_the_declaration(scratch):
    (scratch / "a.sh").write_text("#@ inputs NAME LIST[]\n")
    with pytest.raises(ValueError, match=r"missing \['LIST'\], not declared \['OTHER'\]"):
        render_script("a.sh", NAME="x", OTHER="y")
    with pytest.raises(TypeError, match="LIST must be a list"):
        render_script("a.sh", NAME="x", LIST="y")
    with pytest.raises(TypeError, match="NAME must be a single value"):
        render_script("a.sh", NAME=["x"], LIST=[])
    with pytest.raises(TypeError, match="no bash literal"):
        render_script("a.sh", NAME=None, LIST=[])


def test_includes_expand_indented_and_refuse_cycles_inputs_and_other_languages(scratch):
    (scratch / "lib" / "f.ps1").write_text("function F {\n    1\n}\n")
    (scratch / "a.ps1").write_text("$x = {\n    #@ include lib/f.ps1\n}\n")
    assert render_script("a.ps1") == "$x = {\n    function F {\n        1\n    }\n}\n"
    (scratch / "lib" / "loop.sh").write_text("#@ include lib/loop.sh\n")
    (scratch / "b.sh").write_text("#@ include lib/loop.sh\n")
    with pytest.raises(ValueError, match="cycle"):
        render_script("b.sh")
    (scratch / "c.sh").write_text("#@ include lib/f.ps1\n")
    with pytest.raises(ValueError, match="bad include"):
        render_script("c.sh")
    (scratch / "lib" / "in.sh").write_text("#@ inputs X\n")
    (scratch / "d.sh").write_text("#@ include lib/in.sh\n")
    with pytest.raises(ValueError, match="entry script only"):
        render_script("d.sh", X="1")
    (scratch / "e.sh").write_text("#@ replace X\n")
    with pytest.raises(ValueError, match="unknown directive"):
        render_script("e.sh")


def test_notes_are_dropped_and_comments_kept(scratch):
    (scratch / "lib" / "f.ps1").write_text("    ## why F exists, with its source\nfunction F { 1 }\n")
    (scratch / "a.ps1").write_text("## a note\n# a comment\n#@ include lib/f.ps1\n$x = 1 ## not a note: code first\n")
    assert render_script("a.ps1") == "# a comment\nfunction F { 1 }\n$x = 1 ## not a note: code first\n"
    assert lint_form("a.ps1") == render_script("a.ps1")


def test_no_note_hides_a_linter_directive():
    for name in entry_scripts() + fragments():
        for line in (SCRIPTS_DIR / name).read_text().splitlines():
            if line.lstrip().startswith("##"):
                assert "shellcheck" not in line and "PSScriptAnalyzer" not in line, f"{name}: {line}"


@pytest.mark.parametrize("constant", ["KUBELET_CONF", "INIT_CONFIG_PATH", "KUBE_VIP_MANIFEST_PATH", "INIT_LOG",
                                      "JOIN_LOG", "JOIN_CREDENTIALS_LOG", "RESET_LOG", "RENEWAL_MARKER"])
def test_node_paths_the_tests_name_are_the_paths_the_scripts_use(constant):
    """tests/validators.py names these paths for the tests that run the scripts in a scratch root; the
    scripts spell them under $ROOT (lib/test-root.sh). Both must be the same path."""
    from tests import validators

    path = getattr(validators, constant)
    scripts = "\n".join((SCRIPTS_DIR / name).read_text() for name in BASH + fragments())
    assert re.search(rf'\$ROOT{re.escape(path)}(?![\w.-])', scripts), f"{constant} = {path!r} is in no script"


def test_a_revision_changes_with_any_named_script_or_its_fragments(scratch):
    (scratch / "lib" / "f.sh").write_text("echo f\n")
    (scratch / "a.sh").write_text("#@ include lib/f.sh\necho a\n")
    (scratch / "b.sh").write_text("echo b\n")
    first = script_files.revision("a.sh", "b.sh")
    assert first == script_files.revision("a.sh", "b.sh") and len(first) == 16
    (scratch / "lib" / "f.sh").write_text("echo g\n")
    second = script_files.revision("a.sh", "b.sh")
    (scratch / "b.sh").write_text("echo c\n")
    assert len({first, second, script_files.revision("a.sh", "b.sh")}) == 3
