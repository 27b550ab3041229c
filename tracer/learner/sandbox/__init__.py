"""Running a learner's code: the sandbox process, its warm server, calling the learner's function or module, and recording what it computes."""
