"""Sweeps: a grid in, a tidy DataFrame out (plots are drawn by memlab.evaluation.plots)."""
