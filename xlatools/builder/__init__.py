"""Wheel builds: plan (pure), image, execution in a container or on the host."""
