"""``attn serve``: the app in a browser, on textual-serve, made safe to run on a learner's machine.

textual-serve starts one app process per websocket and, on its own, checks
neither who connects nor from which page. Here every URL carries a random
token (``/TOKEN/...``; anything else is 403), websocket upgrades must come
from the server's own origin, at most a few sessions run at once, each app
is started as an argument list (never through a shell), and a session's
process ends when its page closes.

Nothing here is imported by ``import tracer``; ``tracer.serve.server`` needs
the ``serve`` extra (textual-serve, which brings aiohttp).
"""
