"""Finding, loading and isolating plugins (pluggy)."""

from tracer.plugin_host.host import ENTRY_POINT_GROUP, PluginHost, PluginRecord

__all__ = ["ENTRY_POINT_GROUP", "PluginHost", "PluginRecord"]
