"""Route groups, one module per resource."""
