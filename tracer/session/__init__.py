"""A learner's way through a lesson (or a variant), with no front end in it.

:class:`~tracer.session.lesson.LessonSession` owns what happens between key
presses: opening a lesson and reloading it when its file is saved, the
position (step and loop sub-step), next, back, jump and a loop's end,
answering, grading and hints, saving progress, the end summary and the
lesson after. Each front end (the app, ``attn lesson run --plain
--interactive``) asks it for :meth:`~tracer.session.lesson.LessonSession.view`,
a complete view of the current step, draws that, and forwards the learner's
keys or lines; none of them computes or decides anything beneath it::

    from tracer.session.lesson import open_lesson
    from tracer.session.progress import ProgressStore
    session = open_lesson("dot_products")
    session.attach(ProgressStore())          # resume where the learner stopped
    view = session.view()                    # narration, tables, quiz: all decided
    session.next(); session.answer("0.95"); session.hint(); session.back()

:mod:`tracer.session.explore` does the same for the explorer (a variant
stepped through without a lesson). Both sessions' moves return a typed result
(:mod:`tracer.session.moves`: moved, at the end, failed, refused, or waiting on
a :class:`~tracer.session.moves.Pending` a front end runs off its drawing
thread), and :mod:`tracer.session.places` words where a loop is.
:mod:`tracer.session.progress` keeps the progress file the app and the plain
front end share.

Nothing here imports Textual; this package itself imports nothing heavy.
"""
