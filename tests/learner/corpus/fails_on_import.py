EMBEDDING_SIZE = undefined_name  # noqa: F821 - the mistake under test


def attention(inputs):
    return inputs
