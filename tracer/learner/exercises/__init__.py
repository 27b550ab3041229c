"""``attn exercises`` (the exercises, their progress, the watch and its keys), and the
templates it and ``attn new-plugin`` copy."""
