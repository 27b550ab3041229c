"""The Textual step-through app: ``attn``, ``attn lesson NAME`` and ``attn explore VARIANT``.

Modules, by concern:

- ``launch``: entry points from the CLI (``open_picker``, ``open_lesson``, ``open_explore``);
- ``app`` (+ ``app.tcss``), ``commands`` (ctrl+p palette), ``modals`` (errors, help, yes/no);
- screens: ``picker_screen``, ``lesson_screen``, ``explore_screen``, sharing ``step_screen``
  (stepping keys with Binding ids, auto-play, long work in thread workers);
- widgets: ``tensor_pane`` and ``tensor_view`` (a line-API heatmap drawing only visible
  cells), ``grid`` (what it draws), ``source_view``, ``timeline``, ``quiz_view``, ``text_pane``;
- drawing less per key (mixins our widgets share): ``steady`` (one layout pass per change),
  ``backdrop`` (a container draws each kind of blank row once), ``kept`` (rows handed back
  until the widget is refreshed);
- no state of their own: the position, the moves and what each step shows are the sessions'
  (:mod:`tracer.session`); the screens draw a session's view and run a move's pending work in
  a worker. ``progress`` and ``loop_count`` are kept here for code that imported them.

Importing any of these never imports torch: screens load it in a worker after the first frame.
"""
