"""Running a learner's code: the sandbox process and its warm server, calling the learner's
function or module, recording what it computes, and decoding what comes back."""
