"""proof stage."""
