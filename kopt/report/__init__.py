"""The reports, from result files alone: the results tree read back, tables, plots, Jinja templates."""
