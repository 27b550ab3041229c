"""Names that do not move, and discovery that survives a broken environment.

Each test builds installed distributions the way pip leaves them (a ``*.dist-info`` folder
with ``METADATA`` and ``entry_points.txt`` beside the module) in a temporary folder put on
``sys.path``, so the real ``importlib.metadata`` finds them.
"""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tracer.errors import UsageError
from tracer.plugin_host import PluginHost

Attn = Callable[..., tuple[int, str, str]]

PLUGIN = """
from tracer import Variant, hookimpl, stage

def run(ctx):
    yield stage("inputs", "Inputs from {who}", inputs=ctx.inputs)
    return ctx.inputs

@hookimpl
def register_variants(register):
    register(Variant(name="{variant}", title="{who}", run=run, stages=("inputs",)))
"""


def install(
    site: Path,
    dist: str,
    version: str,
    entry: str,
    variant: str,
    *,
    metadata: str | None = None,
) -> str:
    """A distribution ``dist`` whose entry point ``entry`` registers ``variant``; its module."""
    module = f"attn_{dist.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(textwrap.dedent(PLUGIN.format(who=dist, variant=variant)))
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    text = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
    (info / "METADATA").write_text(text if metadata is None else metadata)
    (info / "entry_points.txt").write_text(f"[attention_tracer]\n{entry} = {module}\n")
    return module


def test_two_third_party_plugins_with_one_name_are_both_refused_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installing an unrelated package must not take a name over: neither plugin gets it."""
    install(tmp_path / "a", "attn-zeta", "1.0", "zeta", "my-topk")
    install(tmp_path / "b", "attn-alpha", "1.0", "alpha", "my-topk")
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    monkeypatch.syspath_prepend(str(tmp_path / "b"))
    host = PluginHost(use_env=False)
    with pytest.raises(UsageError) as refused:
        host.variant("my-topk")
    assert str(refused.value) == (
        "variant 'my-topk' is registered by two plugins, 'alpha' and 'zeta'; name the one you "
        "mean: alpha:my-topk or zeta:my-topk"
    )
    assert host.variant("alpha:my-topk").title == "attn-alpha"
    assert host.variant("zeta:my-topk").title == "attn-zeta"
    records = {r.name: r for r in host.plugins}
    assert records["zeta"].warnings == [
        "variant 'my-topk' is also registered by plugin 'alpha'; neither takes the name: run "
        "this one as 'zeta:my-topk'"
    ]


def test_third_party_order_is_by_distribution_name_not_by_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(tmp_path / "a", "attn-zeta", "1.0", "zeta", "zeta-v")
    install(tmp_path / "b", "attn-alpha", "1.0", "alpha", "alpha-v")
    orders = []
    for first, second in (("a", "b"), ("b", "a")):
        with monkeypatch.context() as patch:
            patch.syspath_prepend(str(tmp_path / second))
            patch.syspath_prepend(str(tmp_path / first))
            host = PluginHost(use_env=False)
            orders.append([r.name for r in host.plugins if r.origin == "entry point"])
    assert orders[0] == orders[1]
    assert orders[0].index("alpha") < orders[0].index("zeta")
    # Built-ins come first, always.
    builtins = [r.origin for r in host.plugins]
    assert builtins[: builtins.count("built-in")] == ["built-in"] * builtins.count("built-in")


def test_a_folder_plugin_and_a_package_of_one_name_are_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attn: Attn
) -> None:
    """The guide's own `banded`, installed as a package and kept in a folder: both load."""
    install(tmp_path / "site", "attn-banded", "0.1.0", "banded", "banded")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    folder = tmp_path / "my_plugins"
    folder.mkdir()
    (folder / "banded.py").write_text(
        textwrap.dedent(PLUGIN.format(who="the folder", variant="banded"))
    )
    host = PluginHost([folder], use_env=False)
    records = {r.name: r for r in host.plugins}
    assert records["banded"].origin == "entry point" and records["banded"].error is None
    assert records["my_plugins/banded"].origin == "folder"
    assert records["my_plugins/banded"].error is None
    assert host.variant("banded:banded").title == "attn-banded"
    assert host.variant("my_plugins/banded:banded").title == "the folder"
    status, out, err = attn("trace", "banded", "--plugins-dir", str(folder))
    assert (status, out) == (2, "")
    assert err.splitlines()[-1] == (
        "attn: variant 'banded' is registered by two plugins, 'banded' and 'my_plugins/banded'; "
        "name the one you mean: banded:banded or my_plugins/banded:banded"
    )
    status, out, _ = attn("trace", "my_plugins/banded:banded", "--plugins-dir", str(folder))
    assert status == 0 and "Inputs from the folder" in out


def test_two_versions_of_one_distribution_are_reported_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attn: Attn
) -> None:
    install(tmp_path / "new", "attn-twice", "2.0", "twice", "twice-v")
    install(tmp_path / "old", "attn-twice", "1.0", "twice", "twice-v")
    monkeypatch.syspath_prepend(str(tmp_path / "old"))
    monkeypatch.syspath_prepend(str(tmp_path / "new"))
    status, _, err = attn("plugins")
    assert status == 0
    lines = [line for line in err.splitlines() if "attn-twice" in line]
    assert lines == [
        f"attn: warning: two versions of distribution 'attn-twice' are on the path: 2.0 "
        f"({tmp_path / 'new' / 'attn_twice-2.0.dist-info'}) and 1.0 "
        f"({tmp_path / 'old' / 'attn_twice-1.0.dist-info'}); attn loads 2.0, the first; "
        "uninstall the other"
    ]


def test_a_distribution_without_readable_metadata_is_skipped_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attn: Attn
) -> None:
    """An interrupted pip install leaves a dist-info whose METADATA is empty (no name)."""
    install(tmp_path / "site", "attn-half", "1.0", "half", "half-v", metadata="")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    where = tmp_path / "site" / "attn_half-1.0.dist-info"
    warning = (
        f"attn: warning: skipped the distribution at {where}: its metadata has no name (an "
        "interrupted install leaves one); reinstall or remove it"
    )
    status, out, err = attn("plugins")
    assert status == 0 and "trainable" in out
    assert err.splitlines().count(warning) == 1
    status, out, err = attn("trace", "vectorized", "--stages", "context")
    assert status == 0 and "context" in out
    assert err.splitlines() == [warning]


def test_entry_points_that_cannot_be_listed_are_read_one_distribution_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """importlib's listing fails as a whole when one distribution's entry points cannot be
    read; the built-ins (and every other plugin) still load."""
    from importlib import metadata

    def unreadable(**params: object) -> object:
        raise PermissionError("entry_points.txt")

    monkeypatch.setattr(metadata, "entry_points", unreadable)
    host = PluginHost(use_env=False)
    assert {"vectorized", "masked", "cross-attention"} <= set(host.variants)
    assert all(r.origin == "built-in" for r in host.plugins[:3])
