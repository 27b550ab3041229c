"""The exercises (`attn exercises`), their templates, and `attn new-plugin`'s scaffold."""
