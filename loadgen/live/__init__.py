"""Live observers of a run: the Prometheus exporter and its metric names and server, the
terminal progress view, Grafana annotations, and the wiring that attaches them to a run."""
