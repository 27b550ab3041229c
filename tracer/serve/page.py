"""The page a browser opens: textual-serve's terminal script, our markup, nothing from elsewhere.

textual-serve's own page also loads a web font from a public CDN; a local
teaching tool should not tell a third party when it is opened, so this page
uses only what the server itself serves.
"""

from __future__ import annotations

from html import escape

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="stylesheet" href="{static}css/xterm.css">
<script src="{static}js/textual.js"></script>
<style>
@font-face {{ font-family: "Roboto Mono"; src: url("{static}fonts/RobotoMono-VariableFont_wght.ttf"); }}
html, body {{ margin: 0; height: 100%; background: #0c181f; color: #e6e6e6; }}
.textual-terminal {{ width: 100vw; height: 100vh; }}
.ended {{ display: none; position: absolute; inset: 0; align-items: center; justify-content: center;
  font: 16px "Roboto Mono", monospace; background: #0c181f; }}
body.-closed .ended {{ display: flex; }}
</style>
</head>
<body>
<div id="terminal" class="textual-terminal" data-session-websocket-url="{websocket}"
  data-font-size="{font_size}"></div>
<div class="ended">Session ended. Reload the page to start a new one.</div>
</body>
</html>
"""


def render_page(title: str, static_url: str, websocket_url: str, font_size: int) -> str:
    return PAGE.format(
        title=escape(title),
        static=escape(static_url),
        websocket=escape(websocket_url),
        font_size=int(font_size),
    )
