"""Plain-text front ends: what a screen reader, a pipe or a file gets instead of the app.

- :mod:`tracer.text.plain_lesson`: a whole lesson as text (``attn lesson run NAME --plain``).
- :mod:`tracer.text.interactive`: a lesson answered line by line (``--plain -i``).
- :mod:`tracer.text.plain_explore`: every step of a variant as text (``attn explore --plain``).
- :mod:`tracer.text.plain_picker`: the lesson list with progress (``attn lessons`` as text).
- :mod:`tracer.text.export`: a lesson as Markdown or a Jupyter notebook.

Like the app, they draw what the session and the lesson views decide, and never decide it again.
"""
